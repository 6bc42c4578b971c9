import Foundation
import HomeportWire

extension HomeportClient {
    /// What a sign-in attempt came to.
    public enum SignInResult: Sendable, Equatable {
        /// Signed in; the server is enrolled (or updated) in the directory.
        case signedIn(ServerRecord)
        /// Not signed in yet: the server says why (`waiting`, `held`, `mail_failed`, or nothing).
        case pending(Standing?)
        /// Not signed in yet: the server mailed a code to the account's address; send it back with
        /// ``HomeportClient/verifyEmail(_:code:)``.
        case verificationRequired(PendingVerification)
        /// Not signed in yet: the password was right and the account signs in with a second
        /// factor; send a code with ``HomeportClient/completeSecondFactor(_:code:)``.
        case secondFactorRequired(PendingSecondFactor)
        /// Not signed in yet: an identity provider vouched for someone new whose address it did
        /// not give, or gave one that has an account; choose another with
        /// ``HomeportClient/completeProviderSignup(_:email:)``.
        case providerSignupRequired(PendingProviderSignup)
    }

    /// A sign-in that waits for the code the server mailed to the account's address. It holds the
    /// pre-login token the server handed out, which goes back only to the address that issued it;
    /// keep it in memory, not on disk (a new sign-in mails a new code).
    public struct PendingVerification: Sendable, Equatable {
        /// The address signed in at.
        public let address: ServerAddress
        /// The account's address, where the code went.
        public let email: String
        let token: String
    }

    /// Signs in at `address` (which becomes the server's primary) with the allauth app-client
    /// flow, stores the session token in the vault, and learns the installation id from app-info.
    /// The password is sent once and never stored.
    public func login(at address: ServerAddress, email: String, password: String) async throws -> SignInResult {
        try await signIn(AllauthAppPath.login, at: address, email: email, password: password)
    }

    /// Creates an account at `address`, then behaves like ``login(at:email:password:)``. With an
    /// `invitation`'s code (a Homeport server's invitation link carries it), the account signs up
    /// whatever the server's sign-up mode, without waiting for approval; a code the server cannot
    /// use is thrown as ``ClientError/rejected(status:errors:)`` with `invalid_invitation`. The
    /// code goes, with the password, only to an address that proved it is the installation.
    public func signup(at address: ServerAddress, email: String, password: String, invitation: String? = nil)
        async throws -> SignInResult
    {
        try await signIn(AllauthAppPath.signup, at: address, email: email, password: password, invitation: invitation)
    }

    private func signIn(
        _ flow: String, at address: ServerAddress, email: String, password: String, invitation: String? = nil
    ) async throws -> SignInResult {
        try await proveKnownAddress(address)
        let body = try JSONEncoder().encode(
            AuthRequest.Credentials(email: email, password: password, invitation: invitation))
        let response = try await authRequest("POST", flow, at: address, body: body)
        return try await finishSignIn(response, at: address, email: email)
    }

    /// An address this device knows as an enrolled installation's whose key is pinned proves that
    /// key before a password goes there (PROTOCOL §9: a credential only to an address that signed
    /// a fresh challenge with the pinned key). One that answers the installation's id without its
    /// key, answers as another installation, or answers nothing one can read, gets no password:
    /// anyone can answer another id. When the server really was reset or reinstalled, the person
    /// says so by removing it here (``remove(_:)``, `homeport remove`) and signing in afresh.
    ///
    /// An address is known by its origin, however it is spelled (a default port written out, a
    /// name's final dot, another form of the same IP address). Every call that sends a secret
    /// to an address it was given (a password, a reset key, an ID token, a handoff's code and
    /// verifier, the address a reset is asked for) asks this first.
    func proveKnownAddress(_ address: ServerAddress) async throws {
        let place = address.place
        guard
            let known = directory.all.first(where: { record in
                record.publicKey != nil
                    && (record.primary.place == place
                        || record.alternatives.contains { $0.address.place == place })
            }), let expected = known.expectedIdentity
        else { return }
        let outcome = await probe.probe(address, expected: expected)
        guard outcome.isMatch else {
            var why =
                "\(outcome); it is an address of \(known.displayName), whose key is pinned here, so the "
                + "password was not sent"
            if case .mismatch = outcome {
                why +=
                    known.primary.place == place
                    ? ". If that server was reset or reinstalled, remove it here (`homeport remove \(known.key)`) "
                        + "and sign in again"
                    : ". Sign in at its primary, \(known.primary.url); if this address is no longer the server's, "
                        + "`homeport address remove \(known.key) \(address.url)`"
            }
            throw ClientError.probeFailed(address: address.url, outcome: why)
        }
    }

    /// Sends the mailed code back (`POST auth/email/verify` with the pending sign-in's token, to the
    /// address that issued it). Signed in, it enrolls the server as ``login(at:email:password:)``
    /// does; an account that still waits for approval is ``SignInResult/pending(_:)``. A wrong code
    /// throws ``ClientError/rejected(status:errors:)`` with `incorrect_code` (the third gives the
    /// verification up: the server then answers 409, and a new sign-in mails a new code).
    public func verifyEmail(_ pending: PendingVerification, code: String) async throws -> SignInResult {
        let body = try JSONEncoder().encode(AuthRequest.EmailVerification(key: code))
        let response = try await authRequest(
            "POST", AllauthAppPath.emailVerify, at: pending.address,
            credential: (pending.token, .issuer(pending.address)), body: body)
        return try await finishSignIn(response, at: pending.address, email: pending.email, pendingToken: pending.token)
    }

    /// Asks the server to mail a new code for a pending sign-in; the old code stops working.
    /// Throws ``ClientError/rejected(status:errors:)`` with 429 when a code went out too recently,
    /// and 409 when nothing waits any more.
    public func resendVerificationCode(_ pending: PendingVerification) async throws {
        let response = try await authRequest(
            "POST", AllauthAppPath.emailVerifyResend, at: pending.address,
            credential: (pending.token, .issuer(pending.address)), body: nil)
        guard response.status == 200 else {
            throw ClientError.rejected(
                status: response.status, errors: (try? decodeEnvelope(response, pending.address))?.errors ?? [])
        }
    }

    /// Turns the answer of a sign-in step into its result: enrolls the server on 200.
    func finishSignIn(
        _ response: ClientResponse, at address: ServerAddress, email: String, pendingToken: String? = nil,
        provider: String? = nil
    ) async throws -> SignInResult {
        let envelope = try decodeEnvelope(response, address)
        if response.status == 401 {
            let token = envelope.meta?.sessionToken ?? pendingToken
            let pending = envelope.data?.flows?.first { $0.isPending == true }
            if let token, !token.isEmpty, pending?.id == "verify_email" {
                return .verificationRequired(PendingVerification(address: address, email: email, token: token))
            }
            if let token, !token.isEmpty, let pending, pending.id == "mfa_authenticate" {
                return .secondFactorRequired(
                    PendingSecondFactor(address: address, email: email, types: pending.types ?? [], token: token))
            }
            if let token, !token.isEmpty, let pending, pending.id == "provider_signup" {
                return .providerSignupRequired(
                    PendingProviderSignup(
                        address: address, provider: pending.provider?.id ?? provider ?? "", token: token))
            }
            return .pending(try await standing(at: address, token: token))
        }
        guard response.status == 200, let token = envelope.meta?.sessionToken, !token.isEmpty else {
            throw ClientError.rejected(status: response.status, errors: envelope.errors ?? [])
        }
        let account = ServerText.clean(envelope.data?.user?.email ?? email)
        let record: ServerRecord
        do {
            record = try await enroll(address, email: account, token: token)
        } catch let error as ClientError {
            // Never leave behind a live session nobody holds: give it back to the server that issued it.
            let ended = await endSession(token, to: .issuer(address)) == .revoked
            throw ClientError.signInNotKept(error, sessionEnded: ended)
        }
        // Pushes follow the session: the device's token is registered with every server signed in on.
        await registerAfterSignIn(record.key)
        return .signedIn(directory.server(record.key) ?? record)
    }

    /// What the pre-login token earned (`GET /api/v1/auth/standing`); `nil` when the server has no such route.
    private func standing(at address: ServerAddress, token: String?) async throws -> Standing? {
        guard let token, let url = address.url(HomeportPath.authStanding) else { return nil }
        let response = try await transport.send(
            try credentialed(
                ClientRequest(
                    url: url, headers: ["Accept": "application/json"], byteLimit: 16 * 1024,
                    deadline: configuration.requestDeadline),
                token: token, for: .issuer(address)))
        return (try? JSONDecoder().decode(StandingAnswer.self, from: response.body))?.standing
    }

    /// Signs out: withdraws this device's push registration from the server (best effort; the
    /// app hears how it went through ``ClientEvent/pushDevice(server:outcome:)``), asks the server to
    /// end the session through an address that answers as the enrolled installation, and erases
    /// the local session whether or not it could. Says whether the server confirmed, and if not, why.
    @discardableResult
    public func logout(_ server: some ServerReference) async throws -> SignOutOutcome {
        await withdrawRegistration(of: try server.record(in: directory))
        // Read again: the server may have refused the session meanwhile.
        let record = try server.record(in: directory)
        let outcome: SignOutOutcome
        if record.signedOut {
            outcome = .notConfirmed("the account was already signed out on this device")
        } else {
            do {
                if let token = try vault.token(for: record.key) {
                    outcome = await endSession(token, of: record)
                } else {
                    outcome = .notConfirmed("no credential was stored on this device")
                }
            } catch {
                // A token that cannot be read is erased all the same.
                outcome = .notConfirmed(
                    "the stored credential could not be read (\(error)), so the server could not be asked to end it")
            }
        }
        try vault.remove(server: record.key)
        try directory.update(record.key) { $0.signedOut = true }
        forgetWinner(record.key)
        try directory.devices.record(nil, for: record.key)
        return outcome
    }

    /// Asks `record`'s server to end the session of `token`, through an address that answers as
    /// the enrolled installation (never through the primary's standing trust alone).
    func endSession(_ token: String, of record: ServerRecord) async -> SignOutOutcome {
        do {
            let choice = try await choose(for: record, matchOnly: true)
            return await endSession(token, to: .chosen(choice, alternativeMatched: false))
        } catch {
            return .notConfirmed("\(error)")
        }
    }

    /// `DELETE auth/session` with `token` at `target`: revoked only when the app door answers.
    func endSession(_ token: String, to target: CredentialTarget) async -> SignOutOutcome {
        let address = target.address
        do {
            let response = try await authRequest(
                "DELETE", AllauthAppPath.session, at: address, credential: (token, target), body: nil)
            guard response.confirmsLogout else {
                return .notConfirmed("\(address.url) answered with \(response.kind), not the app door's answer")
            }
            return .revoked
        } catch {
            return .notConfirmed("\(error)")
        }
    }

    /// Changes the password. The server rotates the token and the vault keeps the new one (a
    /// password change is one of the few answers that may hand out a token). Returns whether the
    /// token was renewed.
    @discardableResult
    public func changePassword(_ server: some ServerReference, current: String, new: String) async throws -> Bool {
        let body = try JSONEncoder().encode(AuthRequest.PasswordChange(currentPassword: current, newPassword: new))
        let (answer, _) = try await exchange(
            "POST", AllauthAppPath.path(AllauthAppPath.passwordChange), to: server, json: body)
        let envelope = try decodeEnvelope(answer.response, answer.via)
        guard answer.response.status == 200 else {
            throw ClientError.rejected(status: answer.response.status, errors: envelope.errors ?? [])
        }
        guard let token = envelope.meta?.sessionToken, !token.isEmpty else { return false }
        let record = try server.record(in: directory)
        try vault.store(token: token, for: record.key)
        return true
    }

    /// Asks `address` to mail a password-reset key (no credential is involved).
    public func requestPasswordReset(at address: ServerAddress, email: String) async throws {
        // The address the mail is for is the person's own: not for an impostor at a known address.
        try await proveKnownAddress(address)
        let body = try JSONEncoder().encode(AuthRequest.PasswordResetRequest(email: email))
        let response = try await authRequest(
            "POST", AllauthAppPath.passwordResetRequest, at: address, body: body)
        guard response.status == 200 else {
            throw ClientError.rejected(
                status: response.status, errors: try decodeEnvelope(response, address).errors ?? [])
        }
    }

    /// Sets a new password at `address` with the key its reset mail carried (`POST
    /// auth/password/reset`; no session token is involved). Every session of the account ends,
    /// this device's too: sign in again with the new password. Throws
    /// ``ClientError/rejected(status:errors:)`` with `invalid_password_reset` for a key that is
    /// unknown, used or expired, or the new password's problem.
    public func completePasswordReset(at address: ServerAddress, key: String, password: String) async throws {
        try await proveKnownAddress(address)
        let body = try JSONEncoder().encode(AuthRequest.PasswordReset(key: key, password: password))
        let response = try await authRequest("POST", AllauthAppPath.passwordReset, at: address, body: body)
        let envelope = try decodeEnvelope(response, address)
        // allauth answers a reset that took with 401 (nobody is signed in by it) and no errors.
        guard response.status == 200 || (response.status == 401 && (envelope.errors ?? []).isEmpty) else {
            throw ClientError.rejected(status: response.status, errors: envelope.errors ?? [])
        }
    }

    /// Deletes the account on `server`, confirmed with its password, through the verified
    /// address as every credentialed call; then forgets the server on this device (its
    /// credential, record, catalogue and push registration: the server erased its side).
    /// Throws ``ClientError/rejected(status:errors:)`` with `incorrect_password` and nothing
    /// changes, on either side.
    public func deleteAccount(_ server: some ServerReference, password: String) async throws {
        let body = try JSONEncoder().encode(AuthRequest.AccountDeletion(password: password))
        let (answer, _) = try await exchange(
            "POST", AllauthAppPath.path(AllauthAppPath.accountDelete), to: server, json: body)
        let envelope = try decodeEnvelope(answer.response, answer.via)
        guard answer.response.status == 200 else {
            throw ClientError.rejected(status: answer.response.status, errors: envelope.errors ?? [])
        }
        try forget(try server.record(in: directory))
    }

    /// Removes a server locally: its credential, its record and its catalogue. Not a remote
    /// revocation; this device's push registration is withdrawn first when the server can be
    /// asked (best effort: offline, the server is removed all the same).
    public func remove(_ server: some ServerReference) async throws {
        let record = try server.record(in: directory)
        await withdrawRegistration(of: record)
        try forget(record)
    }

    /// Erases what this device keeps of a server.
    private func forget(_ record: ServerRecord) throws {
        try vault.remove(server: record.key)
        try directory.remove(record.key)
        forgetWinner(record.key)
        try directory.catalogues.remove(record.key)
        try directory.devices.record(nil, for: record.key)
    }

    /// One request to the auth API at a given address, with a session token for its target or
    /// none; redirects are not followed.
    func authRequest(
        _ method: String, _ path: String, at address: ServerAddress,
        credential: (token: String, target: CredentialTarget)? = nil, body: Data?
    ) async throws -> ClientResponse {
        guard let url = address.url(AllauthAppPath.path(path)) else { throw ClientError.invalidAddress(address.url) }
        var headers = ["Accept": "application/json"]
        if body != nil { headers["Content-Type"] = "application/json" }
        var request = ClientRequest(
            method: method, url: url, headers: headers, body: body, byteLimit: configuration.byteLimit,
            deadline: configuration.requestDeadline)
        if let credential { request = try credentialed(request, token: credential.token, for: credential.target) }
        let response = try await transport.send(request)
        if response.isHTML { throw ClientError.notAnAPI(address: address.url, answer: response.kind) }
        if (300..<400).contains(response.status) {
            throw ClientError.offHostRedirect(
                address: address.url, target: response.headers["location"].map { ServerText.clean($0) } ?? "?")
        }
        return response
    }

    /// The app door's envelope, its error messages cleaned of terminal controls (an app may show
    /// them as they are).
    func decodeEnvelope(_ response: ClientResponse, _ address: ServerAddress) throws -> AuthEnvelope {
        var envelope: AuthEnvelope
        do {
            envelope = try JSONDecoder().decode(AuthEnvelope.self, from: response.body)
        } catch {
            throw ClientError.badAnswer(address: address.url, detail: "not an auth envelope (\(response.kind))")
        }
        envelope.errors = envelope.errors?.map {
            AuthFieldError(
                code: ServerText.clean($0.code), param: $0.param.map { ServerText.clean($0) },
                message: ServerText.clean($0.message))
        }
        return envelope
    }
}
