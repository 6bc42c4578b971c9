import Foundation
import HomeportCrypto
import HomeportLogging
import HomeportStorage
import HomeportWire

/// The handoff: a sign-in only a browser can do (a second factor at the web door, later an
/// identity provider or a passkey) becomes a session of the app that asked for it, as OAuth's
/// authorization code with PKCE does for native apps (RFC 8252, RFC 7636).
///
/// The app asks for a handoff with the SHA-256 of a secret it keeps (`code_challenge`) and where
/// to be called back (an app scheme, or a loopback port); the person opens the handoff's page
/// in the system browser, signs in there by any means and confirms the device by its name; the
/// browser is sent back with a code that lives two minutes, works once, on this installation,
/// and only with the secret. ``AccountService`` builds it; both doors call it.
package final class HandoffService: Sendable {
    let database: any Database
    let rateLimits: RateLimitPolicy
    let clock: any WallClock
    let random: any RandomSource
    let logger: Logger
    let mint: SessionMint

    init(
        database: any Database, rateLimits: RateLimitPolicy, clock: any WallClock, random: any RandomSource,
        logger: Logger, mint: SessionMint
    ) {
        self.database = database
        self.rateLimits = rateLimits
        self.clock = clock
        self.random = random
        self.logger = logger
        self.mint = mint
    }

    /// How long a handoff waits for its confirmation.
    package static let handoffLifetime: Int64 = 600
    /// How long the code of a confirmed handoff can be exchanged.
    package static let handoffCodeLifetime: Int64 = 120

    /// What asking for a handoff came to.
    package enum HandoffStart: Sendable {
        /// The page to open (`/account/handoff/ID`), by its id, which is shown once.
        case started(id: String)
        /// The request is wrong; nothing was stored.
        case invalid([FieldProblem])
        /// Too many sign-ins from this address.
        case rateLimited(retryAfter: Int64)
    }

    /// Stores a handoff for an app: `codeChallenge` is `BASE64URL(SHA-256(verifier))`
    /// (`S256`, the only method), `redirectURI` an app scheme or an RFC 8252 loopback URL, `state`
    /// what the app gets back with the code, `deviceName` what the confirmation page names.
    package func beginHandoff(
        codeChallenge: String, method: String, redirectURI: String, state: String, deviceName: String,
        address: String
    ) throws -> HandoffStart {
        var problems: [FieldProblem] = []
        if !Self.isPKCEValue(codeChallenge, length: 43...43) {
            problems.append(
                FieldProblem(
                    code: AuthErrorCode.invalid, param: "code_challenge",
                    message: "The code challenge must be the base64url SHA-256 of the verifier (43 characters)."))
        }
        if method != "S256" {
            problems.append(
                FieldProblem(
                    code: AuthErrorCode.invalid, param: "code_challenge_method", message: "Only S256 is supported."))
        }
        if let problem = Self.redirectProblem(redirectURI) {
            problems.append(FieldProblem(code: AuthErrorCode.invalid, param: "redirect_uri", message: problem))
        }
        if !(1...512).contains(state.utf8.count) || !state.utf8.allSatisfy({ (0x21...0x7E).contains($0) }) {
            problems.append(
                FieldProblem(
                    code: AuthErrorCode.invalid, param: "state",
                    message: "The state must be 1–512 printable characters without spaces."))
        }
        let name = deviceName.trimmingCharacters(in: .whitespaces)
        if !(1...64).contains(name.count) || name.unicodeScalars.contains(where: Self.isHiddenOrControl) {
            problems.append(
                FieldProblem(
                    code: AuthErrorCode.invalid, param: "device_name",
                    message: "The device name must be 1–64 characters without control or formatting characters."))
        }
        guard problems.isEmpty else { return .invalid(problems) }
        let now = clock.unixSeconds
        let id = try SecretToken.generate(random)
        do {
            try database.transaction { db in
                try RateLimiter(db, policy: rateLimits).charge(
                    .loginPerAddress, RateLimiter.clientKey(address), now: now)
                try HandoffStore(db).pruneExpired(now: now)
                try HandoffStore(db).insert(
                    idHash: SecretToken.storedForm(of: id),
                    .init(
                        codeChallenge: codeChallenge, redirectURI: redirectURI, state: state, deviceName: name,
                        expiresAt: now + Self.handoffLifetime))
            }
        } catch let refusal as RateLimiter.Refusal {
            return .rateLimited(retryAfter: refusal.retryAfter)
        }
        return .started(id: id)
    }

    /// The name of the device a waiting handoff is for, and where it goes back to; `nil` when
    /// there is no such handoff (any more).
    package func waitingHandoff(id: String) throws -> (device: String, redirect: String)? {
        try HandoffStore(database).waiting(idHash: SecretToken.storedForm(of: id), now: clock.unixSeconds).map {
            ($0.deviceName, $0.redirectURI)
        }
    }

    /// Confirms (`allow`) or refuses the handoff `id` for the signed-in `session`: the address to
    /// send the browser to, with `code` and `state` (or `error=access_denied`); `nil` when the
    /// handoff is no longer waiting.
    package func decideHandoff(id: String, allow: Bool, session: Session, account: Account) throws -> String? {
        let idHash = SecretToken.storedForm(of: id)
        let now = clock.unixSeconds
        guard allow else {
            return try HandoffStore(database).delete(idHash: idHash).map {
                Self.callback($0.redirectURI, ["error": "access_denied", "state": $0.state])
            }
        }
        let code = try SecretToken.generate(random)
        let confirmed = try database.transaction { db in
            try HandoffStore(db).confirm(
                idHash: idHash, userID: account.id, approver: session.keyHash, authenticatedAt: session.authenticatedAt,
                codeHash: SecretToken.storedForm(of: code), codeExpiresAt: now + Self.handoffCodeLifetime, now: now)
        }
        guard let confirmed else { return nil }
        logger.notice("handoff confirmed")
        return Self.callback(confirmed.redirectURI, ["code": code, "state": confirmed.state])
    }

    /// What exchanging a handoff's code came to.
    package enum HandoffExchange: Sendable {
        /// A new app session and its token.
        case signedIn(token: String, account: Account, session: Session)
        /// No such code, expired, used, or not with this verifier (the code is spent either way).
        case invalid
        /// Too many failed sign-ins from this address.
        case tooManyFailed(retryAfter: Int64)
        /// Too many sign-ins from this address.
        case rateLimited(retryAfter: Int64)
    }

    /// Exchanges a confirmed handoff's `code` and the app's `verifier` for an app session. The
    /// code is claimed (deleted) before the verifier is compared, so a wrong verifier spends it;
    /// the attempt is charged as a failed sign-in first and given back when it is right.
    package func exchangeHandoff(code: String, verifier: String, address: String) throws -> HandoffExchange {
        let now = clock.unixSeconds
        let client = RateLimiter.clientKey(address)
        do {
            try database.transaction {
                try RateLimiter($0, policy: rateLimits).chargeAddressAttempt(address: address, now: now)
            }
        } catch let refusal as RateLimiter.Refusal {
            return refusal.failedLogins
                ? .tooManyFailed(retryAfter: refusal.retryAfter) : .rateLimited(retryAfter: refusal.retryAfter)
        }
        // The account is read with the claim: its password hash as of the approval's last moment.
        // A change, reset or hold that ends the approval either went first (the code is gone) or
        // waits for this claim, and then the session below is refused (or ended by it).
        guard code.utf8.count <= 128,
            let (claimed, account) = try database.transaction({ db in
                try HandoffStore(db).claim(codeHash: SecretToken.storedForm(of: code), now: now).map {
                    ($0, try AccountStore(db).find(id: $0.userID))
                }
            })
        else {
            logger.notice("handoff refused", metadata: ["reason": "no such code"])
            return .invalid
        }
        let challenge = IdentityProof.base64URL(Digest.sha256(Array(verifier.utf8)))
        guard Self.isPKCEValue(verifier, length: 43...128),
            Digest.constantTimeEquals(Array(challenge.utf8), Array(claimed.request.codeChallenge.utf8))
        else {
            logger.notice("handoff refused", metadata: ["reason": "the verifier does not match"])
            return .invalid
        }
        guard let account else { return .invalid }
        let new = try mint.make(
            kind: .app, userID: account.id,
            authenticatedAt: claimed.authenticatedAt ?? clock.now().timeIntervalSince1970,
            now: now)
        let created = try database.transaction { db in
            guard try SessionStore(db).insertSignedIn(new.session, now: now, passwordHash: account.passwordHash) else {
                return false
            }
            try RateLimiter(db, policy: rateLimits).refund(.failedLoginPerAddress, client, now: now)
            return true
        }
        guard created else {
            logger.notice("handoff refused", metadata: ["reason": "the account is not approved"])
            return .invalid
        }
        logger.notice("signed in", metadata: ["through": "handoff"])
        return .signedIn(token: new.token, account: account, session: new.session)
    }

    // MARK: Rules

    /// What is wrong with `uri` as a handoff's callback, or `nil`: an app's own reverse-domain
    /// scheme (`com.example.app:/…`, RFC 8252 §7.1), or a loopback address with a port (§7.3:
    /// `http://127.0.0.1:PORT/…` or `http://[::1]:PORT/…`), without user information or a
    /// fragment.
    static func redirectProblem(_ uri: String) -> String? {
        guard (1...512).contains(uri.utf8.count), uri.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            let colon = uri.firstIndex(of: ":")
        else { return "The redirect URI must be an app scheme or a loopback URL." }
        let scheme = uri[..<colon].lowercased()
        guard let first = scheme.unicodeScalars.first, ("a"..."z").contains(first),
            scheme.unicodeScalars.allSatisfy({
                ("a"..."z").contains($0) || ("0"..."9").contains($0) || "+.-".unicodeScalars.contains($0)
            })
        else { return "The redirect URI must be an app scheme or a loopback URL." }
        guard !uri.contains("#") else { return "The redirect URI must not have a fragment." }
        if scheme == "http" {
            let rest = uri[uri.index(after: colon)...]
            guard rest.hasPrefix("//") else { return "A loopback redirect URI is http://127.0.0.1:PORT/…." }
            let authority = rest.dropFirst(2).prefix { $0 != "/" && $0 != "?" }
            guard !authority.contains("@") else { return "The redirect URI must not carry user information." }
            let host: Substring
            let port: Substring
            if authority.hasPrefix("[::1]:") {
                (host, port) = (authority.prefix(5), authority.dropFirst(6))
            } else if authority.hasPrefix("127.0.0.1:") {
                (host, port) = (authority.prefix(9), authority.dropFirst(10))
            } else {
                return "A loopback redirect URI is http://127.0.0.1:PORT/… or http://[::1]:PORT/…."
            }
            guard !host.isEmpty, let number = Int(port), (1...65535).contains(number), port.first != "0" else {
                return "A loopback redirect URI names its port."
            }
            return nil
        }
        // An app's own scheme is a reversed domain name the app's maker holds (RFC 8252 §7.1:
        // `com.example.app`): short schemes include browsers' own (`microsoft-edge:https://…`,
        // `googlechromes://…`, `x-safari-https://…`, `webcal://…`), which would carry the code to
        // a web page.
        guard scheme.contains("."), !scheme.hasPrefix("."), !scheme.hasSuffix("."), !scheme.contains("..") else {
            return "An app's redirect URI uses its reverse-domain scheme (com.example.app:/…), or a loopback URL."
        }
        return nil
    }

    /// `uri` with `parameters` added to its query.
    static func callback(_ uri: String, _ parameters: KeyValuePairs<String, String>) -> String {
        let query = parameters.map { $0.key + "=" + Self.formEncoded($0.value) }.joined(separator: "&")
        return uri + (uri.contains("?") ? "&" : "?") + query
    }

    /// Whether `text` is a PKCE verifier or challenge: unreserved characters (RFC 7636 §4.1).
    static func isPKCEValue(_ text: String, length: ClosedRange<Int>) -> Bool {
        length.contains(text.utf8.count)
            && text.utf8.allSatisfy {
                (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) || (0x30...0x39).contains($0)
                    || [0x2D, 0x2E, 0x5F, 0x7E].contains($0)
            }
    }

    /// A control character, or one that reorders or hides text.
    static func isHiddenOrControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.properties.generalCategory == .control || scalar.properties.generalCategory == .format
            || scalar.properties.generalCategory == .lineSeparator
            || scalar.properties.generalCategory == .paragraphSeparator
    }

    /// `application/x-www-form-urlencoded` for one value.
    static func formEncoded(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: unreserved) ?? ""
    }

    /// RFC 3986's unreserved characters, ASCII only (`alphanumerics` would let other scripts' letters through).
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
