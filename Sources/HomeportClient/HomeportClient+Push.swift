import Foundation
import HomeportWire

extension HomeportClient {
    /// The push router with this client's app-data key and deep-link scheme.
    public var pushRouter: PushRouter {
        PushRouter(appDataKey: configuration.pushAppDataKey, deepLinkScheme: configuration.deepLinkScheme)
    }

    // MARK: Routing

    /// Routes a push's payload to the enrolled server that sent it, without any network: the
    /// server named by `s` (or the only one enrolled, when `s` is missing), its thread and deep
    /// link, and whether its `mv` calls for a resync of that server's catalogue. Throws
    /// ``PushRoutingFailure`` when the push cannot be attributed for sure.
    public func routePush(_ payload: Data) throws -> RoutedPush {
        var routed = try pushRouter.route(payload, among: directory.all)
        annotate(&routed)
        return routed
    }

    /// ``routePush(_:)``, then, when the push's `mv` differs from the catalogue kept for its
    /// server, resyncs that server's catalogue — and no other's. At most one resync runs per
    /// server: concurrent pushes wait for the same one, and after one ends the next waits
    /// ``ClientConfiguration/catalogueResyncInterval``. A resync that fails leaves
    /// ``RoutedPush/resyncDue`` true; the push is routed all the same.
    public func receivePush(_ payload: Data) async throws -> RoutedPush {
        var routed = try routePush(payload)
        guard routed.resyncDue else { return routed }
        let server = routed.server
        _ = try? await directory.catalogues.resync(
            server, mv: routed.catalogueVersion, minimumInterval: configuration.catalogueResyncInterval
        ) { kept in
            try await self.fetchCatalogue(server, kept: kept)
        }
        annotate(&routed)
        return routed
    }

    private func annotate(_ routed: inout RoutedPush) {
        let catalogues = directory.catalogues
        routed.resyncDue = catalogues.isResyncDue(server: routed.server, mv: routed.catalogueVersion)
        routed.codeTitle = catalogues.catalogue(for: routed.server)?.codes.first { $0.code == routed.code }?.title
    }

    // MARK: Catalogue

    /// The catalogue kept for `server` (nothing is fetched).
    public func keptCatalogue(_ server: some ServerReference) throws -> NotificationCatalogue? {
        directory.catalogues.catalogue(for: try server.record(in: directory).key)
    }

    /// Fetches `server`'s catalogue (`If-None-Match` with the kept version; a 304 keeps it) and
    /// keeps it; joins a resync of that server already running instead of starting another.
    @discardableResult
    public func syncCatalogue(_ server: some ServerReference) async throws -> NotificationCatalogue {
        let key = try server.record(in: directory).key
        let catalogue = try await directory.catalogues.resync(key) { kept in
            try await self.fetchCatalogue(key, kept: kept)
        }
        guard let catalogue else { throw ClientError.badAnswer(address: key, detail: "no catalogue") }
        return catalogue
    }

    /// `GET /api/v1/notifications/catalogue`, conditional on the kept version.
    func fetchCatalogue(_ server: some ServerReference, kept: CatalogueStore.Entry?) async throws
        -> CatalogueStore.FetchResult
    {
        var headers: [String: String] = [:]
        if let version = kept?.catalogue.version, Self.isEntityTagText(version) {
            headers["If-None-Match"] = "\"\(version)\""
        }
        let answer = try await send("GET", HomeportPath.notificationsCatalogue, to: server, headers: headers)
        let response = answer.response
        if response.status == 304, headers["If-None-Match"] != nil { return .notModified }
        guard response.status == 200 else { throw Self.refusal(answer) }
        guard response.isJSON,
            let catalogue = try? JSONDecoder().decode(NotificationCatalogue.self, from: response.body)
        else {
            throw ClientError.badAnswer(address: answer.via.url, detail: "the catalogue answered \(response.kind)")
        }
        return .catalogue(
            NotificationCatalogue(
                version: ServerText.clean(catalogue.version),
                codes: catalogue.codes.map {
                    .init(code: ServerText.clean($0.code), title: ServerText.clean($0.title))
                }))
    }

    /// Whether `text` can go between the quotes of an entity tag as it is.
    static func isEntityTagText(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.count <= 256 && text.utf8.allSatisfy { $0 == 0x21 || (0x23...0x7E).contains($0) }
    }

    // MARK: Device registration

    /// Makes `token` the device's push token and registers it with every server signed in on
    /// (and, from now on, at every sign-in). A server that had another token of this device gets
    /// that one withdrawn. Returns what each server answered; one failing does not stop the rest,
    /// and nothing is queued for later (call again when the app starts or the token changes).
    @discardableResult
    public func setDeviceToken(_ token: String, environment: PushEnvironment) async throws -> [String:
        PushDeviceOutcome]
    {
        let registration = try Self.registration(token, environment)
        try directory.devices.setDevice(registration)
        let servers = directory.all.filter { !$0.signedOut }.map(\.key)
        return await withTaskGroup(of: (String, PushDeviceOutcome).self) { group in
            for server in servers {
                group.addTask {
                    do {
                        return (server, .registered(try await self.register(registration, with: server)))
                    } catch {
                        return (server, .registrationFailed("\(error)"))
                    }
                }
            }
            var outcomes: [String: PushDeviceOutcome] = [:]
            for await (server, outcome) in group { outcomes[server] = outcome }
            return outcomes
        }
    }

    /// Registers `token` with one server (`POST /api/v1/push/devices`), through the address
    /// chosen for the session token like every authenticated request. The token another
    /// registration of this device left there is withdrawn (best effort).
    @discardableResult
    public func registerDevice(token: String, environment: PushEnvironment, with server: some ServerReference)
        async throws
        -> PushDeviceRegistration
    {
        try await register(try Self.registration(token, environment), with: server)
    }

    private func register(_ registration: PushDeviceRegistration, with server: some ServerReference) async throws
        -> PushDeviceRegistration
    {
        let key = try server.record(in: directory).key
        let answer = try await send(
            "POST", HomeportPath.pushDevices, to: key, json: try JSONEncoder().encode(registration))
        guard (200...201).contains(answer.response.status) else { throw Self.refusal(answer) }
        let previous = directory.devices.registration(for: key)
        try directory.devices.record(registration, for: key)
        if let previous, previous.token != registration.token {
            try? await deleteRegistration(previous.token, at: key)
        }
        return registration
    }

    /// Registers a Web Push subscription (a browser's, or a UnifiedPush distributor's endpoint and
    /// keys) with one server, through the address chosen for the session token like every
    /// authenticated request; returns the server's name for it (`webpush:…`), which is what is
    /// kept here (never the keys). A registration this device made there before is withdrawn.
    @discardableResult
    public func registerWebPush(endpoint: String, keys: WebPushKeys, with server: some ServerReference) async throws
        -> PushDeviceRegistration
    {
        try await registerNamed(PushDeviceRegistration(webPushEndpoint: endpoint, keys: keys), with: server)
    }

    /// Registers an Android app's FCM registration token with one server, as
    /// ``registerWebPush(endpoint:keys:with:)`` does a subscription: what is kept here is the
    /// server's name for it (`fcm:…`).
    @discardableResult
    public func registerFCM(token: String, with server: some ServerReference) async throws -> PushDeviceRegistration {
        try await registerNamed(PushDeviceRegistration(fcmToken: token), with: server)
    }

    /// Sends `request` and keeps the server's name for the device it answers.
    private func registerNamed(_ request: PushDeviceRegistration, with server: some ServerReference) async throws
        -> PushDeviceRegistration
    {
        let key = try server.record(in: directory).key
        let answer = try await send("POST", HomeportPath.pushDevices, to: key, json: try JSONEncoder().encode(request))
        guard (200...201).contains(answer.response.status) else { throw Self.refusal(answer) }
        guard let named = try? JSONDecoder().decode(PushDeviceRegistration.self, from: answer.response.body),
            named.provider == request.provider, !named.token.isEmpty
        else {
            throw ClientError.badAnswer(address: key, detail: "the registration's answer does not name the device")
        }
        let previous = directory.devices.registration(for: key)
        try directory.devices.record(named, for: key)
        if let previous, previous.token != named.token {
            try? await deleteRegistration(previous.token, at: key)
        }
        return named
    }

    /// The VAPID public key `server` signs its Web Pushes with (`applicationServerKey`, base64url),
    /// or `nil` when it sends none.
    public func webPushKey(of server: some ServerReference) async throws -> String? {
        let key = try server.record(in: directory).key
        let answer = try await send("GET", HomeportPath.pushWebPushKey, to: key)
        if answer.response.status == 404 { return nil }
        guard answer.response.status == 200,
            let object = try? JSONDecoder().decode(WebPushServerKey.self, from: answer.response.body)
        else { throw Self.refusal(answer) }
        return object.publicKey
    }

    /// Withdraws the token this device registered with `server` (`DELETE /api/v1/push/devices/{token}`)
    /// and forgets it. Returns the registration withdrawn, or `nil` when none was recorded.
    @discardableResult
    public func unregisterDevice(from server: some ServerReference) async throws -> PushDeviceRegistration? {
        let key = try server.record(in: directory).key
        guard let registration = directory.devices.registration(for: key) else { return nil }
        try await deleteRegistration(registration.token, at: key)
        try directory.devices.record(nil, for: key)
        return registration
    }

    private func deleteRegistration(_ token: String, at server: some ServerReference) async throws {
        let answer = try await send("DELETE", HomeportPath.pushDevice(token), to: server)
        guard [200, 204].contains(answer.response.status) else { throw Self.refusal(answer) }
    }

    /// `POST /api/v1/push/test`: the server sends one notification to this account's devices.
    /// Returns how many devices it queued it for.
    public func sendTestPush(_ server: some ServerReference) async throws -> Int {
        let answer = try await send("POST", HomeportPath.pushTest, to: server)
        guard answer.response.status == 202 || answer.response.status == 200 else { throw Self.refusal(answer) }
        guard let queued = try? JSONDecoder().decode(TestPushQueued.self, from: answer.response.body) else {
            throw ClientError.badAnswer(address: answer.via.url, detail: "push test answered \(answer.response.kind)")
        }
        return queued.queued
    }

    /// At sign-in: registers the device's token (or the one last registered with this server)
    /// with `server`, and tells the app how that went. The sign-in stands either way.
    func registerAfterSignIn(_ server: String) async {
        guard let registration = directory.devices.device ?? directory.devices.registration(for: server) else {
            return
        }
        // A Web Push subscription or an FCM token is kept here by the server's name only: the app
        // registers it again itself (the server forgot it with the session that ended).
        guard registration.provider == .apns else {
            onEvent(
                .pushDevice(
                    server: server,
                    outcome: .registrationFailed(
                        "this device's \(registration.provider.rawValue) registration is kept by its name only: "
                            + "register it again (registerWebPush or registerFCM)")))
            return
        }
        do {
            onEvent(.pushDevice(server: server, outcome: .registered(try await register(registration, with: server))))
        } catch {
            onEvent(.pushDevice(server: server, outcome: .registrationFailed("\(error)")))
        }
    }

    /// Before a sign-out or a removal: asks `record`'s server to drop this device's registration
    /// (best effort) and tells the app how that went. The caller forgets it here once the local
    /// session is erased, whatever the server said.
    func withdrawRegistration(of record: ServerRecord) async {
        guard !record.signedOut, let registration = directory.devices.registration(for: record.key) else { return }
        do {
            try await deleteRegistration(registration.token, at: record.key)
            onEvent(.pushDevice(server: record.key, outcome: .unregistered))
        } catch {
            onEvent(.pushDevice(server: record.key, outcome: .unregistrationNotConfirmed("\(error)")))
        }
    }

    private static func registration(_ token: String, _ environment: PushEnvironment) throws
        -> PushDeviceRegistration
    {
        guard let hex = PushDeviceToken.normalized(token) else {
            throw ClientError.invalidInput(
                "'\(ServerText.clean(token, limit: 80))' is not a device token: use its hex form, 16 to 200 digits")
        }
        return PushDeviceRegistration(token: hex, environment: environment)
    }

    /// The error of an API answer that is not the one asked for: the server's JSON error when it
    /// gave one, cleaned of terminal controls.
    static func refusal(_ answer: Answer) -> ClientError {
        let response = answer.response
        if response.isJSON, let envelope = try? JSONDecoder().decode(ErrorEnvelope.self, from: response.body) {
            return .refused(
                address: answer.via.url, status: response.status, code: ServerText.clean(envelope.error.code),
                message: ServerText.clean(envelope.error.message),
                field: envelope.error.field.map { ServerText.clean($0) })
        }
        return .badAnswer(address: answer.via.url, detail: "answered \(response.kind)")
    }
}

/// `POST /api/v1/push/test`'s answer.
private struct TestPushQueued: Decodable { var queued: Int }
