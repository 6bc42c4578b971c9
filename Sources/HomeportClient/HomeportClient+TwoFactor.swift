import Foundation
import HomeportWire

/// Two-factor sign-in (django-allauth's MFA app): completing a sign-in that waits for a code,
/// and turning TOTP on and off. Codes, secrets and recovery codes pass through in memory only;
/// the client writes none of them anywhere, and asks the password again where the server wants
/// the change confirmed.
extension HomeportClient {
    /// A sign-in whose password was right, waiting for a second factor. It holds the pre-login
    /// token the server handed out, which goes back only to the address that issued it; keep it
    /// in memory, not on disk (it lives 15 minutes; a new sign-in makes a new one).
    public struct PendingSecondFactor: Sendable, Equatable {
        /// The address signed in at.
        public let address: ServerAddress
        /// The account signing in.
        public let email: String
        /// The factors the server accepts: `totp`, `recovery_codes`.
        public let types: [String]
        let token: String
    }

    /// Completes a sign-in with the code the person typed (six digits from the authenticator app,
    /// or a recovery code), then enrolls the server as ``login(at:email:password:)`` does. Forget
    /// the code afterwards: it is good once. A wrong code throws
    /// ``ClientError/rejected(status:errors:)`` with `incorrect_code` (try again), and when the
    /// account's tries are spent `too_many_login_attempts`; 401 means the sign-in expired.
    public func completeSecondFactor(_ pending: PendingSecondFactor, code: String) async throws -> SignInResult {
        let body = try JSONEncoder().encode(AuthRequest.SecondFactor(code: code))
        let response = try await authRequest(
            "POST", AllauthAppPath.twoFactorAuthenticate, at: pending.address,
            credential: (pending.token, .issuer(pending.address)), body: body)
        if response.status == 401 {
            throw ClientError.rejected(status: 401, errors: [])
        }
        return try await finishSignIn(response, at: pending.address, email: pending.email, pendingToken: pending.token)
    }

    /// What setting TOTP up starts from: a secret for the authenticator app, as text and as the
    /// `otpauth://` URL a QR code carries.
    public struct TOTPSetup: Sendable, Equatable {
        /// The secret, base32.
        public let secret: String
        /// The `otpauth://totp/…` URL (show it as a QR code).
        public let url: String
    }

    /// The account's second factors on `server` (empty when two-factor sign-in is off).
    public func authenticators(_ server: some ServerReference) async throws -> [AuthenticatorInfo] {
        let (answer, _) = try await exchange("GET", AllauthAppPath.path(AllauthAppPath.authenticators), to: server)
        guard answer.response.status == 200,
            let list = try? JSONDecoder().decode(AuthenticatorList.self, from: answer.response.body)
        else { throw try rejection(answer) }
        return list.data
    }

    /// A new TOTP secret to set up, kept by the server for this session; `nil` when TOTP is on
    /// already. Throws ``ClientError/rejected(status:errors:)`` with 404 when the server offers no
    /// second factor.
    public func beginTOTPSetup(_ server: some ServerReference) async throws -> TOTPSetup? {
        let (answer, _) = try await exchange("GET", AllauthAppPath.path(AllauthAppPath.totp), to: server)
        if answer.response.status == 200 { return nil }
        guard answer.response.status == 404,
            let offer = try? JSONDecoder().decode(TOTPOffer.self, from: answer.response.body)
        else { throw try rejection(answer) }
        return TOTPSetup(secret: offer.meta.secret, url: offer.meta.totpURL)
    }

    /// Turns TOTP on with a code of the secret ``beginTOTPSetup(_:)`` gave, confirming the
    /// password first, and returns the recovery codes, shown this once (give them to the person,
    /// then forget them). A wrong code or password throws ``ClientError/rejected(status:errors:)``
    /// (`incorrect_code`, `incorrect_password`).
    public func enableTOTP(_ server: some ServerReference, code: String, password: String) async throws -> [String] {
        try await reauthenticate(server, password: password)
        let body = try JSONEncoder().encode(AuthRequest.SecondFactor(code: code))
        let (answer, _) = try await exchange("POST", AllauthAppPath.path(AllauthAppPath.totp), to: server, json: body)
        guard answer.response.status == 200 else { throw try rejection(answer) }
        return try await shownRecoveryCodes(server, method: "GET")
    }

    /// Turns TOTP off (and the recovery codes with it), confirming the password first.
    public func disableTOTP(_ server: some ServerReference, password: String) async throws {
        try await reauthenticate(server, password: password)
        let (answer, _) = try await exchange("DELETE", AllauthAppPath.path(AllauthAppPath.totp), to: server)
        guard answer.response.status == 200 else { throw try rejection(answer) }
    }

    /// Makes new recovery codes (the old ones stop working), confirming the password first, and
    /// returns them, shown this once.
    public func regenerateRecoveryCodes(_ server: some ServerReference, password: String) async throws -> [String] {
        try await reauthenticate(server, password: password)
        return try await shownRecoveryCodes(server, method: "POST")
    }

    /// The recovery codes of the answer that shows them; empty when they were shown before.
    private func shownRecoveryCodes(_ server: some ServerReference, method: String) async throws -> [String] {
        let (answer, _) = try await exchange(method, AllauthAppPath.path(AllauthAppPath.recoveryCodes), to: server)
        guard answer.response.status == 200,
            let shown = try? JSONDecoder().decode(ShownAuthenticator.self, from: answer.response.body)
        else { throw try rejection(answer) }
        return shown.data.unusedCodes ?? []
    }

    /// Confirms the password of this device's session on `server` (`auth/reauthenticate`).
    private func reauthenticate(_ server: some ServerReference, password: String) async throws {
        let body = try JSONEncoder().encode(AuthRequest.Reauthentication(password: password))
        let (answer, _) = try await exchange(
            "POST", AllauthAppPath.path(AllauthAppPath.reauthenticate), to: server, json: body)
        guard answer.response.status == 200 else { throw try rejection(answer) }
    }

    /// The error for an answer that is not the one asked for: its envelope's errors, if any.
    private func rejection(_ answer: Answer) throws -> ClientError {
        .rejected(
            status: answer.response.status, errors: (try? decodeEnvelope(answer.response, answer.via))?.errors ?? [])
    }
}

/// `account/authenticators`' answer.
private struct AuthenticatorList: Decodable { var data: [AuthenticatorInfo] }

/// `account/authenticators/totp`'s answer while TOTP is off: a secret to set up.
private struct TOTPOffer: Decodable {
    struct Meta: Decodable {
        var secret: String
        var totpURL: String
        enum CodingKeys: String, CodingKey {
            case secret
            case totpURL = "totp_url"
        }
    }
    var meta: Meta
}

/// `account/authenticators/recovery-codes`' answer.
private struct ShownAuthenticator: Decodable { var data: AuthenticatorInfo }
