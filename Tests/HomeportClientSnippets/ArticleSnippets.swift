import Foundation
import HomeportClient
import HomeportWire

extension Connection {
    func refresh() async {
        for server in client.directory.all where !server.signedOut {
            _ = try? await client.appInfo(server.key)
        }
        // Read again: an identity change moves a server to its new key.
        for server in client.directory.all where !server.signedOut {
            _ = try? await client.syncCatalogue(server.key)
        }
    }
}

func application(
    _ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data
) {
    let token = PushDeviceToken.hex(deviceToken)
    Task {
        let outcomes = try await connection.client.setDeviceToken(token, environment: .production)
        for (server, outcome) in outcomes {
            if case .registrationFailed(let reason) = outcome { log("\(server): \(reason)") }
        }
    }
}

extension Connection {
    func signIn(at text: String, allowHTTP: Bool, email: String, password: String) async throws
        -> ServerRecord?
    {
        let address = try ServerAddress(parsing: text, allowHTTP: allowHTTP)
        switch try await client.login(at: address, email: email, password: password) {
        case .signedIn(let record):
            return record
        case .pending(let standing):
            // Waiting for approval, on hold, a mail that could not be sent, or nothing to say:
            // show it and keep the form.
            showPending(standing)
            return nil
        case .verificationRequired(let pending):
            // The server mailed a code to the address: ask for it, then send it back.
            let code = try await askForCode(sentTo: pending.email)
            guard case .signedIn(let record) = try await client.verifyEmail(pending, code: code) else {
                return nil
            }
            return record
        case .secondFactorRequired(let pending):
            // Two-factor sign-in: ask for the authenticator's code (or a recovery code).
            let code = try await askForSecondFactor(pending)
            guard case .signedIn(let record) = try await client.completeSecondFactor(pending, code: code) else {
                return nil
            }
            return record
        case .providerSignupRequired:
            // Only after a sign-in through an identity provider (not a password).
            return nil
        }
    }
}

func handle(_ event: ClientEvent) {
    switch event {
    case .identityChanged(let server, let old, let new, let unverifiedAlternatives):
        // "books.example.net now answers as another installation. Its other addresses are not
        //  used until you check them again."
        askToVerify(server, was: old, now: new, addresses: unverifiedAlternatives)
    case .signedOut(let server):
        showSignedOut(server)
    case .primaryMoved(let server, let from, let to):
        // The server's own address changed (it answered from its new one): say so once.
        showMoved(server, from: from, to: to)
    case .pathChanged, .sessionReplaced, .pushDevice:
        break
    }
}

func userNotificationCenter(
    _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse
) async {
    let userInfo = response.notification.request.content.userInfo
    guard JSONSerialization.isValidJSONObject(userInfo),
        let payload = try? JSONSerialization.data(withJSONObject: userInfo)
    else { return }
    do {
        let routed = try await connection.client.receivePush(payload)
        if let link = routed.deepLink { open(link, on: routed.server) }
    } catch {
        // PushRoutingFailure: not attributable to an enrolled server, so nothing is opened.
    }
}

func addHomeAddress(record: ServerRecord) async throws {
    let home = try ServerAddress(parsing: "http://192.168.1.20:8080", allowHTTP: true)
    try await connection.client.addAddress(home, to: record.key)
}

func checkAddresses(of server: String) async throws {
    let record = try server.record(in: connection.client.directory)
    let results = try await connection.client.verifyAddresses(of: server)
    for (address, outcome) in results where address != record.primary && !outcome.isMatch {
        offerToRemove(address, because: outcome.description)
    }
}

func signOut(_ server: String) async throws {
    switch try await connection.client.logout(server) {
    case .revoked:
        showSignedOut(server)
    case .notConfirmed(let reason):
        // Erased on this device only; the session may stay valid on the server until it expires.
        showSignedOut(server, note: reason)
    }
}

func showSignInError(at address: ServerAddress, email: String, password: String) async throws {
    do {
        _ = try await connection.client.login(at: address, email: email, password: password)
    } catch let error as ClientError {
        logger.error("\(error.description)")
        presentAlert(title: error.localizedDescription, message: error.recoverySuggestion)
    }
}
