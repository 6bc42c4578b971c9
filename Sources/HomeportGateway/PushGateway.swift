import Foundation
import HomeportHTTP
import HomeportLifecycle
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportWire

/// How a push gateway runs.
package struct PushGatewayConfiguration: Sendable {
    /// The listener (and its TLS, workers and limits).
    package var http: HTTPServerConfiguration
    /// The gateway's database: SQLite for one process, PostgreSQL for replicas.
    package var database: DatabaseURL
    /// The developer's APNs key, and Apple's hosts.
    package var apns: APNsSettings
    /// The app's bundle id: the only `apns-topic` the gateway sends to.
    package var topic: String
    /// The payload's app-data key, whose `s` must be the sender's installation id.
    package var appDataKey: String
    /// Pushes one enrolled server may send a minute, over every replica.
    package var pushesPerMinute: Int
    /// Devices one enrolled server may register.
    package var devicesPerServer: Int
    /// Batches one server may have in flight at once in one process (of ``http``'s pool threads,
    /// which send to APNs): never more than the pool's threads less two, and at least one.
    package var batchesPerServer: Int
    /// The bytes of devices this process keeps in memory, over every server, so a push's device
    /// is found without a database read (``GatewayDeviceCache``); 0 for none.
    package var deviceCacheBytes: Int
    /// Where `/metrics` (per-server counters) is served; `nil` for nowhere.
    package var metricsListen: ListenAddress?
    /// The app's VAPID key, when the gateway sends Web Pushes (browsers, UnifiedPush) too.
    package var webPush: WebPushSettings?
    /// The app's Firebase service account, when the gateway sends to FCM too.
    package var fcm: FCMSettings?

    /// Creates a configuration.
    package init(
        http: HTTPServerConfiguration, database: DatabaseURL, apns: APNsSettings, topic: String,
        appDataKey: String = "homeport", pushesPerMinute: Int = 60_000, devicesPerServer: Int = 100_000,
        batchesPerServer: Int = 4, deviceCacheBytes: Int = 48 << 20, metricsListen: ListenAddress? = nil
    ) {
        self.http = http
        self.database = database
        self.apns = apns
        self.topic = topic
        self.appDataKey = appDataKey
        self.pushesPerMinute = pushesPerMinute
        self.devicesPerServer = devicesPerServer
        self.batchesPerServer = batchesPerServer
        self.deviceCacheBytes = deviceCacheBytes
        self.metricsListen = metricsListen
    }
}

/// A push gateway (`homeport-server gateway serve`): holds the app developer's APNs key (and,
/// when given them, its FCM service account and VAPID key) for servers run by strangers, and knows each server by the installation id it was enrolled with
/// from its own address (`gateway servers add --url`), one enrolment per installation.
///
/// What it guarantees, on every replica (PostgreSQL) at once:
/// - a push whose `s` (or `thread-id`) is not the sender's installation id is refused, so a
///   phone can trust `s`;
/// - a server pushes only to the devices it registered through the gateway, so its credential,
///   leaked, reaches its own devices and nobody else's;
/// - a revoked server is refused from its next request; the others go on;
/// - each server is held to its own rate, its own count of devices, and its own share of the
///   threads that send to APNs;
/// - no payload text and no whole device token is logged.
package final class PushGateway: Sendable {
    /// The configuration it runs with.
    package let configuration: PushGatewayConfiguration
    /// Its database.
    package let database: any Database
    private let logger: Logger
    /// Per-server counters of this process, for `/metrics`.
    let counters: GatewayCounters
    /// Each server's batches in flight in this process.
    let inFlight: GatewayInFlight
    /// Each server's device changes in flight in this process (one at a time).
    let changesInFlight: GatewayInFlight
    /// The devices servers registered, as this process knows them.
    let deviceCache: GatewayDeviceCache
    private let server: HTTPServer
    private let metricsServer: HTTPServer?
    /// The listeners, the requests' first: started in order, stopped in reverse.
    private let listeners: ServiceGroup

    /// How long the Web Push and FCM rounds of a batch start new requests (each request then
    /// has its 10 seconds).
    static let batchBudget: Duration = .seconds(15)

    /// Opens and migrates the database and prepares the routes; nothing listens yet.
    package init(configuration: PushGatewayConfiguration, logger: Logger, clock: any WallClock = SystemWallClock())
        throws
    {
        self.configuration = configuration
        let gatewayLogger = logger.withLabel("homeport.gateway")
        self.logger = gatewayLogger
        var options = DatabaseOptions()
        options.maximumConnections = configuration.http.workerThreads + configuration.http.poolThreads + 2
        let database = try configuration.database.open(options: options)
        let deliveries: PushDispatch
        do {
            let applied = try GatewaySchema.migrator.migrate(database)
            if !applied.isEmpty {
                self.logger.notice(
                    "applied migrations",
                    metadata: [
                        "component": GatewaySchema.component,
                        "versions": applied.map(String.init).joined(separator: ","),
                    ])
            }
            // A batch answers within the server's wait for it (`PushGatewaySettings.timeoutSeconds`,
            // 50 seconds): Apple's first, then Web Push and FCM side by side, each starting no
            // request after `batchBudget` (a push not started comes back unsent, to go again).
            deliveries = PushDispatch(
                apns: try APNsDelivery(
                    database: database, settings: configuration.apns, clock: clock, logger: self.logger),
                webPush: try configuration.webPush.map {
                    try WebPushDelivery(settings: $0, clock: clock, logger: gatewayLogger, budget: Self.batchBudget)
                },
                fcm: try configuration.fcm.map {
                    try FCMDelivery(settings: $0, database: database, clock: clock, budget: Self.batchBudget)
                })
        } catch {
            database.close()
            throw error
        }
        self.database = database
        let counters = GatewayCounters()
        self.counters = counters
        // Two of the pool's threads are always left to other servers (or to this one's device
        // changes): one server's flood never holds them all.
        let inFlight = GatewayInFlight(
            limit: max(1, min(configuration.batchesPerServer, configuration.http.poolThreads - 2)))
        self.inFlight = inFlight
        let changesInFlight = GatewayInFlight(limit: 1)
        self.changesInFlight = changesInFlight
        let deviceCache = GatewayDeviceCache(capacity: configuration.deviceCacheBytes)
        self.deviceCache = deviceCache
        let handlers = GatewayHandlers(
            database: database, deliveries: deliveries, configuration: configuration, clock: clock, logger: self.logger,
            counters: counters, inFlight: inFlight, changesInFlight: changesInFlight,
            credentials: GatewayCredentials(database: database),
            deviceCache: deviceCache)
        var router = Router<EmptyRequestContext>()
        router.get("/healthz") { _, _ in HTTPResponse(status: 200, body: Data("ok\n".utf8)) }
        // A stranger's batch (up to 8 MiB) is refused from its head, before it is read.
        router.headCheck = { handlers.checkHead($0) }
        router.post(PushGatewayPath.pushes, placement: .pool) { request, _ in try handlers.pushes(request) }
        router.post(PushGatewayPath.devices, placement: .pool) { request, _ in try handlers.devices(request) }
        router.get(PushGatewayPath.services, placement: .pool) { request, _ in try handlers.services(request) }
        let server = HTTPServer(configuration: configuration.http, responder: router, logger: logger)
        self.server = server
        if let address = configuration.metricsListen {
            var http = HTTPServerConfiguration(host: address.host, port: address.port, workerThreads: 1)
            http.poolThreads = 1
            var metricsRouter = Router<EmptyRequestContext>()
            metricsRouter.get("/metrics") { _, _ in
                HTTPResponse(
                    status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                    body: Data((server.metrics.render() + counters.render()).utf8))
            }
            metricsServer = HTTPServer(configuration: http, responder: metricsRouter, logger: logger)
            server.metrics.enable()
        } else {
            metricsServer = nil
        }
        let logger = self.logger
        listeners = ServiceGroup(
            [HTTPListenerService(name: "homeport.gateway.http", server: server, logger: logger)]
                + (metricsServer.map {
                    [HTTPListenerService(name: "homeport.gateway.metrics", server: $0, logger: logger)]
                }
                    ?? [])
        ) { verb, name in logger.debug("\(name) \(verb)") }
    }

    /// Starts listening; returns the bound port.
    @discardableResult
    package func start() throws -> Int {
        try listeners.start()
        var providers = ["apns"]
        if configuration.fcm != nil { providers.append("fcm") }
        if configuration.webPush != nil { providers.append("webpush") }
        logger.notice(
            "push gateway listening",
            metadata: [
                "port": String(server.port), "topic": configuration.topic,
                "providers": providers.joined(separator: ","),
            ])
        return server.port
    }

    /// The bound port (0 before ``start()``).
    package var port: Int { server.port }

    /// The bound port of `/metrics`, when it is served.
    package var metricsPort: Int? { metricsServer?.port }

    /// Stops: no new connections, requests in flight finish, the database closes.
    package func shutdown() {
        listeners.stop()
        database.close()
    }
}
