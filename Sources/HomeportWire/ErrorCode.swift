/// The stable `code`s of Homeport's own JSON error shape (``ErrorEnvelope``).
public enum APIErrorCode {
    /// No live, signed-in session token came with a request that needs one.
    public static let notAuthenticated = "not_authenticated"
    /// Signed in, but not in the account group the route is for (403).
    public static let forbidden = "forbidden"
    /// No route serves the path.
    public static let notFound = "not_found"
    /// The path exists with other methods.
    public static let methodNotAllowed = "method_not_allowed"
    /// The body is over the limit.
    public static let payloadTooLarge = "payload_too_large"
    /// The server cannot take this request now (too many bodies in memory, a dependency down).
    public static let unavailable = "unavailable"
    /// The installation identity cannot be read.
    public static let identityUnavailable = "identity_unavailable"
    /// An identity challenge for a local network's address came from elsewhere: it is not
    /// signed (a relay could pass it on from another network's impostor).
    public static let challengeRefused = "challenge_refused"
    /// The request line is malformed in a way only Homeport checks (a NUL byte in the target).
    public static let badRequest = "bad_request"
    /// The request's framing is ambiguous (RFC 9112 §6.3).
    public static let badFraming = "bad_framing"
    /// The request asks for something this server does not implement (a transfer coding).
    public static let notImplemented = "not_implemented"
    /// A handler failed; the detail is in the server's log.
    public static let internalError = "internal_error"
    /// A request field is missing or not valid; `field` names it.
    public static let invalidField = "invalid_field"
    /// Too many requests of this kind; `Retry-After` says when to try again.
    public static let rateLimited = "rate_limited"
    /// A push gateway's: this server has as many batches in flight as it may, so nothing was
    /// sent; `Retry-After` says when to try again.
    public static let tooManyRequests = "too_many_requests"
    /// An account or a client address holds as many notification streams as it may; `Retry-After` says when to try again.
    public static let tooManyStreams = "too_many_streams"
    /// An account holds as many muted threads as it may: unmute one first.
    public static let tooManyMutes = "too_many_mutes"
    /// Another account holds this Web Push subscription with other keys.
    public static let subscriptionTaken = "subscription_taken"
}

/// The `code`s of the app door's 400 errors, shared with django-allauth.
public enum AuthErrorCode {
    /// A required field is missing.
    public static let required = "required"
    /// A value is not valid (or the body is not JSON).
    public static let invalid = "invalid"
    /// A sign-up's invitation cannot be used: wrong, used up, expired, revoked, or for another
    /// address (Homeport's own code; the answer never says which).
    public static let invalidInvitation = "invalid_invitation"
    /// Sign-up with an address that has an account.
    public static let emailTaken = "email_taken"
    /// The address and password do not match an account.
    public static let emailPasswordMismatch = "email_password_mismatch"
    /// A new password is too short.
    public static let passwordTooShort = "password_too_short"
    /// A new password is too long (Homeport's bound on work per attempt).
    public static let passwordTooLong = "password_too_long"
    /// Password change with a wrong current password.
    public static let enterCurrentPassword = "enter_current_password"
    /// A password confirming an action (deleting the account) that is not the account's
    /// (allauth's reauthentication code).
    public static let incorrectPassword = "incorrect_password"
    /// A reset key that is unknown, used or expired.
    public static let invalidPasswordReset = "invalid_password_reset"
    /// The body is not of the JSON media type.
    public static let unsupportedMediaType = "unsupported_media_type"
    /// Too many failed sign-ins (allauth answers these 400, not 429).
    public static let tooManyLoginAttempts = "too_many_login_attempts"
    /// A verification code that is not the one mailed.
    public static let incorrectCode = "incorrect_code"
    /// A verification key when verification by code is off (allauth's link keys; Homeport has none).
    public static let invalidOrExpiredKey = "invalid_or_expired_key"
    /// Recovery codes asked for by an account without a second factor to recover.
    public static let cannotGenerateRecoveryCodes = "cannot_generate_recovery_codes"
    /// A server-declared CSRF failure: the one refusal a client may retry once.
    public static let csrfInvalid = "csrf_invalid"
    /// An identity provider's token that is not accepted (`auth/provider/token`).
    public static let invalidToken = "invalid_token"
    /// `auth/provider/token` without `token.client_id`.
    public static let clientIDRequired = "client_id_required"
    /// `auth/provider/token` without `token.id_token`.
    public static let tokenRequired = "token_required"
    /// `process` is neither `login` nor `connect`.
    public static let invalidChoice = "invalid_choice"
    /// The provider account is linked to another account.
    public static let connectedOther = "connected_other"
    /// No such linked provider account.
    public static let accountNotFound = "account_not_found"
    /// Unlinking would leave an account with no password and no provider to sign in with.
    public static let noPassword = "no_password"
    /// Unlinking would leave an account whose address is unverified with no way in.
    public static let noVerifiedEmail = "no_verified_email"
    /// A handoff's code that is unknown, expired, used, or not with this verifier.
    public static let invalidHandoff = "invalid_handoff"
}
