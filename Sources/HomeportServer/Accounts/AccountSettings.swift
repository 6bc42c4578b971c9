import Foundation
import HomeportWebAuthn

/// How accounts, sessions and their limits behave on this installation.
package struct AccountSettings: Sendable, Hashable {
    /// Open signup, approval required, or closed.
    package var signup: SignupPolicy
    /// Session lifetime in seconds, fixed from login (default one year).
    package var sessionLifetime: Int64
    /// How long a password-reset key works, in seconds.
    package var resetKeyLifetime: Int64
    /// PBKDF2 iterations for new password hashes.
    package var passwordIterations: Int
    /// The rate limits both doors share.
    package var rateLimits: RateLimitPolicy
    /// The address people use to reach the web door (for links in mail); `nil` uses the listen address.
    package var publicURL: String?
    /// Whether an address must be verified by a mailed code before its account gets a session.
    package var emailVerification: EmailVerificationPolicy
    /// A CA to trust besides the system's when fetching identity providers' discovery documents
    /// and keys (`HOMEPORT_OIDC_CA_FILE`: a provider behind a private CA).
    package var providerCAFile: String?
    /// Who may invite from the app (`POST /api/v1/invitations`): admins (the default), every
    /// member, or nobody.
    package var invitations: InvitationPolicy = .admins

    /// How long a mailed verification code works, in seconds (as django-allauth: 15 minutes).
    package static let verificationCodeLifetime: Int64 = 900

    /// Creates settings; the defaults suit a small installation reachable from the internet.
    package init(
        signup: SignupPolicy = .approval, sessionLifetime: Int64 = 365 * 86400, resetKeyLifetime: Int64 = 3600,
        passwordIterations: Int = 600_000, rateLimits: RateLimitPolicy = RateLimitPolicy(), publicURL: String? = nil,
        emailVerification: EmailVerificationPolicy = .none, providerCAFile: String? = nil
    ) {
        self.providerCAFile = providerCAFile
        self.signup = signup
        self.sessionLifetime = sessionLifetime
        self.resetKeyLifetime = resetKeyLifetime
        self.passwordIterations = passwordIterations
        self.rateLimits = rateLimits
        self.publicURL = publicURL
        self.emailVerification = emailVerification
    }

    /// The public address, unless it is a wildcard listen address (its default with `--listen
    /// 0.0.0.0`), which is nowhere a browser or an app can go.
    var reachablePublicURL: String? {
        guard let url = publicURL, !["0.0.0.0", "[::]", "::"].contains(URLComponents(string: url)?.host ?? "")
        else { return nil }
        return url
    }

    /// The relying party passkeys are bound to (the public address's host), or `nil` when the
    /// public address cannot be one (an IP address, plain HTTP but on `localhost`).
    var relyingParty: RelyingParty? { reachablePublicURL.flatMap(RelyingParty.init(publicURL:)) }

    /// Whether cookies must be `Secure` (the public address is HTTPS).
    package var secureCookies: Bool { publicURL?.lowercased().hasPrefix("https://") ?? false }
}

/// Whether sign-in waits for the address to be verified.
package enum EmailVerificationPolicy: String, Sendable, CaseIterable {
    /// Addresses are not verified (the default).
    case none
    /// A sign-up, or a sign-in to an account whose address is not verified yet, mails a short code;
    /// the session begins once the code comes back (django-allauth's verification by code).
    case code
}
