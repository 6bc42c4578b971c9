/// What one conformance check found.
enum ConformanceResult: String, Sendable, CaseIterable {
    /// The server does what the protocol says.
    case pass
    /// The server does something else; the detail says what.
    case fail
    /// The server has no identity route (404), so it is an older server (or a stock django-allauth):
    /// a client keeps it single-address. Not a failure.
    case olderServer = "older-server"
    /// Not run: it needs something the command line did not give (an account, `--change-password`).
    case skipped
}

/// One check of `homeport conformance`: one row of its table.
struct ConformanceCheck: Sendable, Hashable {
    /// A stable name for programs (`identity-shape`).
    let id: String
    /// What it checks, in one line.
    let title: String
    /// How it checks, for `--help`.
    let explanation: String
}

/// A check and what it found.
struct ConformanceRow: Sendable {
    /// The check.
    let check: ConformanceCheck
    /// Its result.
    let result: ConformanceResult
    /// What was seen, in a sentence (never a password or a token).
    let detail: String
}

extension ConformanceCheck {
    static let identityShape = ConformanceCheck(
        id: "identity-shape", title: "The identity route answers product, protocolVersion 1 and a UUID instanceId",
        explanation: """
            GET /api/v1/server-identity with no credential: 200, a JSON object with exactly product (a string), \
            protocolVersion (the integer 1) and instanceId (a lowercase UUID). 404 is an older server.
            """)
    static let identityHeaders = ConformanceCheck(
        id: "identity-headers", title: "The identity answer is JSON, no-store, and sets no cookie",
        explanation:
            "The same answer's headers: Content-Type application/json (once), Cache-Control no-store, no Set-Cookie."
    )
    static let identityCredentialBlind = ConformanceCheck(
        id: "identity-credential-blind", title: "The identity route reads no credential",
        explanation: """
            The identity route again with a made-up X-Session-Token, a made-up Authorization header, made-up \
            session cookies, and all three at once: the same status and the same bytes (or the same fields) as \
            without, and no Set-Cookie.
            """)
    static let identityProof = ConformanceCheck(
        id: "identity-proof", title: "A challenge gets the installation key's signature, or no key at all",
        explanation: """
            GET /api/v1/server-identity?challenge= with 32 fresh random bytes: 200 with the same id, and either \
            publicKey with a signature that verifies for this challenge and this host, or neither (a server \
            without an installation key: clients check it by its id alone, reported as older-server). A \
            challenge of 8 bytes: 400 invalid_field, nothing signed.
            """)
    static let appInfoAnonymous = ConformanceCheck(
        id: "app-info-anonymous", title: "App-info refuses a caller without a live token, without saying why",
        explanation: """
            GET /api/v1/app-info with no token, a random token and a malformed one: 401 with the API's JSON error \
            not_authenticated (the only refusal a client signs out on), and the same body each time.
            """)
    static let standingStranger = ConformanceCheck(
        id: "standing-stranger", title: "Standing tells a stranger nothing",
        explanation: """
            GET /api/v1/auth/standing with no token, a random token and a malformed one: the same 200 JSON answer \
            with no standing (null or absent).
            """)
    static let appDoorConfig = ConformanceCheck(
        id: "app-door-config", title: "The app door's config is an allauth envelope",
        explanation: """
            GET /_allauth/app/v1/config: 200 JSON {"status": 200, "data": {"account": {...}}}; with \
            data.socialaccount, each provider has an id, a name and, for provider_token, a client_id.
            """)
    static let handoff = ConformanceCheck(
        id: "handoff", title: "A browser sign-in is handed only to the app that asked",
        explanation: """
            POST /_allauth/app/v1/auth/handoff with an S256 challenge and a reverse-domain way back: 200 with \
            data.url (a web page) and data.expires_in; the same with a web page as the way back, or with plain \
            PKCE: 400. A server without handoffs (404) is older-server.
            """)
    static let appDoorInvalidToken = ConformanceCheck(
        id: "app-door-invalid-token", title: "The app door answers an invalid token with 410",
        explanation: """
            GET /_allauth/app/v1/auth/session with a random X-Session-Token: 410 envelope with \
            meta.is_authenticated null (the client drops the token and starts clean).
            """)
    static let appDoorNoToken = ConformanceCheck(
        id: "app-door-no-token", title: "The app door answers no token with 401 and the flows",
        explanation: """
            GET /_allauth/app/v1/auth/session with no token: 401 envelope with data.flows and \
            meta.is_authenticated false.
            """)
    static let appDoorEmptyToken = ConformanceCheck(
        id: "app-door-empty-token", title: "An empty X-Session-Token header is no token",
        explanation: """
            The same with an empty X-Session-Token header: 401 as with no token, not 410. (libcurl cannot send an \
            empty header, so this one request goes through URLSession, which trusts the system's CAs only: with \
            --ca-file over HTTPS it is skipped.)
            """)
    static let login = ConformanceCheck(
        id: "login", title: "Login answers a session token",
        explanation: """
            POST /_allauth/app/v1/auth/login with the test account: 200 envelope with meta.session_token, \
            meta.is_authenticated true and data.user.
            """)
    static let sessionStatus = ConformanceCheck(
        id: "session-status", title: "The session token opens auth/session",
        explanation: "GET auth/session with the token: 200 with meta.is_authenticated true and the account's data.user."
    )
    static let appInfoSignedIn = ConformanceCheck(
        id: "app-info-signed-in", title: "App-info answers the features and the identity route's instanceId",
        explanation: """
            GET /api/v1/app-info with the token: 200 JSON with product and protocolVersion as the identity route \
            says, a version, features including server-connection-identity, and the same instanceId.
            """)
    static let apiHeaderOnly = ConformanceCheck(
        id: "api-header-only", title: "The API prefix takes the token from the header only",
        explanation: """
            App-info with a session cookie and no X-Session-Token is 401: the app's token sent as the usual \
            session cookies (sessionid, homeport_session, __Host-homeport_session), and, when the server has \
            Homeport's web door at /account/login, a real browser session signed in there (and signed out after).
            """)
    static let loginWhileSignedIn = ConformanceCheck(
        id: "login-while-signed-in", title: "Logging in while signed in is refused with 409",
        explanation: "POST auth/login with the live token in X-Session-Token: 409, as django-allauth answers.")
    static let secondLogin = ConformanceCheck(
        id: "second-login", title: "A second login issues another token, and both work",
        explanation: """
            POST auth/login again without a token: 200 with a different meta.session_token; auth/session answers \
            200 to both tokens.
            """)
    static let passwordChange = ConformanceCheck(
        id: "password-change", title: "A password change rotates the token and ends the other sessions",
        explanation: """
            With --change-password: POST account/password/change (to the second line of standard input): 200 \
            with a new token that works; the old token gets 410 (and 401 on the API prefix); the second login's \
            session no longer works; then the password is changed back the same way.
            """)
    static let pushRegistration = ConformanceCheck(
        id: "push-registration", title: "A device token registers and unregisters",
        explanation: """
            POST /api/v1/push/devices with a made-up token in upper case: 200 naming it in lower case; a token \
            that is not hex: 400; no session: 401; DELETE /api/v1/push/devices/{token} twice: 2xx both times.
            """)
    static let catalogueETag = ConformanceCheck(
        id: "catalogue-etag", title: "The catalogue answers its version as the ETag, and 304 to it",
        explanation: """
            GET /api/v1/notifications/catalogue: 200 {version, codes: [{code, title}]} with ETag "version"; again \
            with If-None-Match set to it: 304 with no body; with another version's: 200.
            """)
    static let mutes = ConformanceCheck(
        id: "mutes", title: "A thread mutes, lists and unmutes",
        explanation: """
            PUT /api/v1/notifications/mutes/{thread} for a made-up thread, twice: 2xx; GET …/mutes lists it; \
            DELETE: 2xx, and it is gone from the list; a thread id with a blank: 400.
            """)
    static let stream = ConformanceCheck(
        id: "stream", title: "The stream carries events as they happen, resumes, and ends with its session",
        explanation: """
            GET /api/v1/notifications/stream (text/event-stream); two POST /api/v1/push/test notifications reach \
            it with growing ids; a second stream with Last-Event-ID set to the first id starts with the second; a \
            stream of another session (a second login) ends within 5 s of that session's logout. Skipped when \
            the account's test-notification budget is spent (429).
            """)
    static let logout = ConformanceCheck(
        id: "logout", title: "Logout ends the session",
        explanation: """
            DELETE auth/session: 401 envelope with meta.is_authenticated false; afterwards the token gets 410 on \
            the app door and 401 on the API prefix.
            """)
    static let wrongPassword = ConformanceCheck(
        id: "wrong-password", title: "A wrong password is refused without a token",
        explanation: "POST auth/login with a wrong password: 400 with the error email_password_mismatch and no token."
    )

    static let verificationByCode = ConformanceCheck(
        id: "verification-by-code", title: "Verification by code: a wrong code is refused, the mailed one signs in",
        explanation: """
            With --mailbox DIR, on a server whose config enables verification by code: a fresh address signs up \
            (401, a pre-login token, a pending verify_email flow); the code mailed to it is read from DIR; a wrong \
            code is 400 incorrect_code; the mailed one answers 200 (or 401 waiting for approval). The account it \
            made is then deleted (account/delete) or signed out.
            """)

    static let invitationRefused = ConformanceCheck(
        id: "invitation-refused", title: "A made-up invitation signs nobody up, and says nothing more",
        explanation: """
            POST /_allauth/app/v1/auth/signup with a fresh address, a made-up invitation and a password too short \
            on purpose: 400 with invalid_invitation as the only error (the code is checked first, so the answer \
            does not depend on the rest), and no token. A server without invitations refuses the password \
            (older-server); either way no account is made.
            """)
    static let household = ConformanceCheck(
        id: "household", title: "The account says its groups; its invitations are listed without codes",
        explanation: """
            With a test account: GET /api/v1/account is 200 {id, email (the account's), groups (sorted strings), \
            stage approved, canInvite (a boolean, if present)}; GET /api/v1/invitations is 200 {invitations: \
            [...]}, none with a code or link. 404 for the account is an older server.
            """)

    /// Every check, in the order they run and are printed.
    static let all: [ConformanceCheck] = [
        identityShape, identityHeaders, identityCredentialBlind, identityProof, appInfoAnonymous, standingStranger,
        appDoorConfig,
        appDoorInvalidToken, appDoorNoToken, appDoorEmptyToken, handoff, login, sessionStatus, appInfoSignedIn,
        apiHeaderOnly, pushRegistration, catalogueETag, mutes, stream, loginWhileSignedIn, secondLogin, passwordChange,
        household, logout, wrongPassword, invitationRefused, verificationByCode,
    ]
}
