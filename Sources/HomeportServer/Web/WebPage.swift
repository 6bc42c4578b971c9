import HomeportHTTP
import HomeportWire

/// The web door's HTML: plain pages, no script, one small inline style sheet.
enum WebPage {
    static func render(title: String, product: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>\(htmlEscaped(title)) · \(htmlEscaped(product))</title>
        <style>
        body { font: 16px/1.5 system-ui, sans-serif; background: #f4f5f7; color: #1d2330; margin: 0; }
        main { max-width: 24rem; margin: 4rem auto; background: #fff; padding: 2rem; border-radius: 12px;
               box-shadow: 0 1px 3px rgba(0,0,0,.12); }
        h1 { font-size: 1.4rem; margin: 0 0 1.2rem; }
        label { display: block; margin: .8rem 0 .2rem; font-weight: 600; font-size: .9rem; }
        input[type=email], input[type=password], input[type=text] { width: 100%; box-sizing: border-box; padding: .55rem .7rem;
               border: 1px solid #c5cad3; border-radius: 8px; font-size: 1rem; }
        button { margin-top: 1.2rem; width: 100%; padding: .65rem; border: 0; border-radius: 8px;
                 background: #2456d3; color: #fff; font-size: 1rem; font-weight: 600; cursor: pointer; }
        .error { background: #fdecec; color: #8a1c1c; padding: .6rem .8rem; border-radius: 8px; }
        .note { color: #566074; font-size: .9rem; }
        .trap { display: none; }
        .secret { word-break: break-all; }
        code { font-size: .95rem; }
        nav { margin-top: 1.2rem; font-size: .9rem; display: flex; justify-content: space-between; }
        a { color: #2456d3; }
        </style>
        </head>
        <body><main>
        <h1>\(htmlEscaped(title))</h1>
        \(body)
        </main></body>
        </html>
        """
    }

    static func errors(_ messages: [String]) -> String {
        messages.isEmpty ? "" : messages.map { "<p class=\"error\">\(htmlEscaped($0))</p>" }.joined()
    }

    /// The hidden CSRF field and the honeypot a person never sees (nor fills in).
    static func guardFields(csrf: String) -> String {
        """
        <input type="hidden" name="csrf_token" value="\(htmlEscaped(csrf))">
        <div class="trap" aria-hidden="true"><label>Website <input name="website" tabindex="-1" autocomplete="off"></label></div>
        """
    }

    /// The sign-in form; with `passkeys`, the address field also offers the browser's passkeys
    /// in its autofill (conditional mediation, `autocomplete="username webauthn"`).
    static func loginForm(
        csrf: String, email: String = "", errors: [String] = [], providers: [(id: String, name: String)] = [],
        passkeys: Bool = false
    ) -> String {
        """
        \(Self.errors(errors))
        \(providerButtons(providers))
        <form method="post" action="/account/login">
        \(guardFields(csrf: csrf))
        <label for="email">Email</label>
        <input id="email" type="email" name="email" value="\(htmlEscaped(email))" \
        autocomplete="\(passkeys ? "username webauthn" : "username")" required>
        <label for="password">Password</label>
        <input id="password" type="password" name="password" autocomplete="current-password" required>
        <button type="submit">Sign in</button>
        </form>
        <nav><a href="/account/signup">Create an account</a><a href="/account/password/reset">Forgot password?</a></nav>
        """
    }

    static func signupForm(
        csrf: String, email: String = "", errors: [String] = [], providers: [(id: String, name: String)] = [],
        invitation: String? = nil
    ) -> String {
        let invited = invitation.map {
            "<p class=\"note\">You were invited.</p><input type=\"hidden\" name=\"invitation\" value=\"\(htmlEscaped($0))\">"
        }
        return """
            \(Self.errors(errors))
            \(invitation == nil ? providerButtons(providers) : "")
            <form method="post" action="/account/signup">
            \(guardFields(csrf: csrf))
            \(invited ?? "")
            <label for="email">Email</label>
            <input id="email" type="email" name="email" value="\(htmlEscaped(email))" autocomplete="username" required>
            <label for="password">Password</label>
            <input id="password" type="password" name="password" autocomplete="new-password" minlength="8" required>
            <button type="submit">Create account</button>
            </form>
            <nav><a href="/account/login">I have an account</a></nav>
            """
    }

    static func verifyForm(csrf: String, errors: [String] = [], note: String? = nil) -> String {
        """
        \(Self.errors(errors))
        <p class="note">\(note ?? "We have mailed you a code. Enter it here to confirm that the address is yours.")</p>
        <form method="post" action="/account/verify-email">
        \(guardFields(csrf: csrf))
        <label for="code">Code</label>
        <input id="code" type="text" name="code" autocomplete="one-time-code" autocapitalize="characters" required>
        <button type="submit">Confirm</button>
        </form>
        <form method="post" action="/account/verify-email/resend">
        \(guardFields(csrf: csrf))
        <button type="submit">Send a new code</button>
        </form>
        <nav><a href="/account/login">Back to sign in</a></nav>
        """
    }

    static func resetRequestForm(csrf: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <p class="note">We will send a link to set a new password.</p>
        <form method="post" action="/account/password/reset">
        \(guardFields(csrf: csrf))
        <label for="email">Email</label>
        <input id="email" type="email" name="email" autocomplete="username" required>
        <button type="submit">Send link</button>
        </form>
        <nav><a href="/account/login">Back to sign in</a></nav>
        """
    }

    static func resetForm(csrf: String, key: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <form method="post" action="/account/password/reset/key/\(htmlEscaped(key))">
        \(guardFields(csrf: csrf))
        <label for="password">New password</label>
        <input id="password" type="password" name="password" autocomplete="new-password" minlength="8" required>
        <button type="submit">Set password</button>
        </form>
        """
    }

    static func message(_ text: String, link: (href: String, label: String)? = nil) -> String {
        var html = "<p>\(htmlEscaped(text))</p>"
        if let link { html += "<nav><a href=\"\(htmlEscaped(link.href))\">\(htmlEscaped(link.label))</a></nav>" }
        return html
    }

    /// A button per identity provider (links: the pages' `form-action 'self'` would stop a form
    /// from leaving for the provider).
    static func providerButtons(_ providers: [(id: String, name: String)]) -> String {
        guard !providers.isEmpty else { return "" }
        let links = providers.map {
            "<a class=\"provider\" href=\"/account/provider/\(htmlEscaped($0.id))/start\">Continue with \(htmlEscaped($0.name))</a>"
        }
        return "<nav class=\"providers\">" + links.joined() + "</nav>"
    }

    /// The address for an account a provider vouched for.
    static func providerSignupForm(csrf: String, provider: String, email: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <p class="note">\(htmlEscaped(provider)) signed you in. Choose the address of your account on this server.</p>
        <form method="post" action="/account/provider/signup">
        \(guardFields(csrf: csrf))
        <label for="email">Email</label>
        <input id="email" type="email" name="email" value="\(htmlEscaped(email))" autocomplete="email" required>
        <button type="submit">Create my account</button>
        </form>
        """
    }

    /// The provider accounts linked to an account, each with a button that removes it, and the
    /// providers to connect.
    static func providersPage(
        csrf: String, links: [(provider: String, account: String, name: String, display: String)],
        connectable: [(id: String, name: String)], errors: [String] = []
    ) -> String {
        let rows = links.map { link in
            """
            <form method="post" action="/account/providers/remove">
            \(guardFields(csrf: csrf))
            <input type="hidden" name="provider" value="\(htmlEscaped(link.provider))">
            <input type="hidden" name="account" value="\(htmlEscaped(link.account))">
            <p>\(htmlEscaped(link.name)): <strong>\(htmlEscaped(link.display))</strong></p>
            <button type="submit">Remove</button>
            </form>
            """
        }
        let connect = connectable.map {
            "<a class=\"provider\" href=\"/account/provider/\(htmlEscaped($0.id))/start?process=connect&amp;csrf_token=\(htmlEscaped(csrf))\">Connect \(htmlEscaped($0.name))</a>"
        }
        return """
            \(Self.errors(errors))
            \(rows.isEmpty ? "<p>No sign-in provider is linked to this account.</p>" : rows.joined())
            \(connect.isEmpty ? "" : "<nav class=\"providers\">" + connect.joined() + "</nav>")
            <nav><a href="/account">Your account</a></nav>
            """
    }

    /// The confirmation of a handoff: which device, which account, on which server.
    static func handoffForm(
        csrf: String, id: String, device: String, email: String, product: String, returnsTo: String
    ) -> String {
        """
        <p>An app on <strong>\(htmlEscaped(device))</strong> asks to sign in to this \(htmlEscaped(product)) server
        as <strong>\(htmlEscaped(email))</strong>. The sign-in goes to <strong>\(htmlEscaped(returnsTo))</strong>.</p>
        <p class="note">Allow it only if you started this sign-in yourself, on that device, just now.</p>
        <form method="post" action="\(WebDoor.handoffPrefix)/\(htmlEscaped(id))">
        \(guardFields(csrf: csrf))
        <button type="submit" name="decision" value="allow">Sign in \(htmlEscaped(device))</button>
        <button type="submit" name="decision" value="deny">Cancel</button>
        </form>
        """
    }

    /// The way back to the app after a handoff's decision: followed at once, and a link.
    static func handoffDone(_ location: String, text: String) -> String {
        """
        <meta http-equiv="refresh" content="0;url=\(htmlEscaped(location))">
        <p>\(htmlEscaped(text))</p>
        <nav><a href="\(htmlEscaped(location))">Open the app</a></nav>
        """
    }

    static func deleteForm(csrf: String, email: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <p class="note">Deleting <strong>\(htmlEscaped(email))</strong> signs it out everywhere and erases its
        devices, notifications and settings on this server. It cannot be undone.</p>
        <form method="post" action="/account/delete">
        \(guardFields(csrf: csrf))
        <label for="password">Password</label>
        <input id="password" type="password" name="password" autocomplete="current-password" required>
        <button type="submit">Delete my account</button>
        </form>
        <nav><a href="/account">Keep my account</a></nav>
        """
    }

    static func signedIn(email: String, csrf: String, pairing: PairingLink? = nil) -> String {
        """
        <p>Signed in as <strong>\(htmlEscaped(email))</strong>.</p>
        <form method="post" action="/account/logout">
        \(guardFields(csrf: csrf))
        <button type="submit">Sign out</button>
        </form>
        \(pairing.map(pairingSection) ?? "")
        <nav><a href="/account/2fa/totp">Two-factor sign-in</a><a href="/account/delete">Delete your account</a></nav>
        """
    }

    /// The pairing link as a QR code and as text: an app that scans it checks the installation's
    /// key before it sends anything.
    static func pairingSection(_ link: PairingLink) -> String {
        let text = link.description
        return """
            <section id="pairing">
            <h2>Pair an app</h2>
            <p class="note">Scan this with the app, or give it the link below. The app checks that the server it reaches holds this installation's key before it sends your password.</p>
            \(QRCodeSVG.svg(text, id: "pairing-qr") ?? "")
            <p class="note secret">Key: <code id="pairing-key">\(htmlEscaped(link.keyFingerprint))</code></p>
            <p class="note secret">Link: <code id="pairing-link">\(htmlEscaped(text))</code></p>
            </section>
            """
    }

    /// The second step of a sign-in to an account with two-factor sign-in.
    static func secondFactorForm(csrf: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <p class="note">Enter the code your authenticator app shows, or one of your recovery codes.</p>
        <form method="post" action="/account/2fa/authenticate">
        \(guardFields(csrf: csrf))
        <label for="code">Code</label>
        <input id="code" type="text" name="code" inputmode="numeric" autocomplete="one-time-code" required>
        <button type="submit">Sign in</button>
        </form>
        <nav><a href="/account/login">Back to sign in</a></nav>
        """
    }

    /// Setting up TOTP: the secret as a QR code and as text, and a form that confirms the password
    /// and takes the first code.
    static func totpSetupForm(csrf: String, secret: String, url: String, qr: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <p class="note">Scan this code with an authenticator app, or type the key in, then enter the code it shows.</p>
        <p>\(qr)</p>
        <p class="note">Key: <code id="totp-secret">\(htmlEscaped(secret))</code></p>
        <p class="note secret">Link: <code id="totp-url">\(htmlEscaped(url))</code></p>
        <form method="post" action="/account/2fa/totp">
        \(guardFields(csrf: csrf))
        <label for="password">Your password</label>
        <input id="password" type="password" name="password" autocomplete="current-password" required>
        <label for="code">Code from the app</label>
        <input id="code" type="text" name="code" inputmode="numeric" autocomplete="one-time-code" required>
        <button type="submit">Turn on two-factor sign-in</button>
        </form>
        <nav><a href="/account">Not now</a></nav>
        """
    }

    /// The recovery codes, shown this once.
    static func recoveryCodes(_ codes: [String]) -> String {
        """
        <p>Two-factor sign-in is on. Keep these recovery codes somewhere safe: each signs you in once
        if your phone is lost. They are shown only now.</p>
        <ul>\(codes.map { "<li><code class=\"recovery-code\">\(htmlEscaped($0))</code></li>" }.joined())</ul>
        <nav><a href="/account">Done</a></nav>
        """
    }

    /// TOTP is on: turning it off takes the password.
    static func totpActive(csrf: String, errors: [String] = []) -> String {
        """
        \(Self.errors(errors))
        <p>Two-factor sign-in is on: signing in asks for a code from your authenticator app.</p>
        <form method="post" action="/account/2fa/totp/disable">
        \(guardFields(csrf: csrf))
        <label for="password">Your password</label>
        <input id="password" type="password" name="password" autocomplete="current-password" required>
        <button type="submit">Turn off two-factor sign-in</button>
        </form>
        <nav><a href="/account">Back</a></nav>
        """
    }
}
