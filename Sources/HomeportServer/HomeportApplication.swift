import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportLifecycle
import HomeportLogging
import HomeportStorage
import HomeportWire

/// A running Homeport server: the database (migrated), the routes, and the HTTP listener.
package final class HomeportApplication: Sendable {
    /// The configuration it runs with.
    package let configuration: ServerConfiguration
    /// The database, shared by every route.
    package let database: any Database
    /// The installation identity.
    package let identity: IdentityStore
    /// Accounts and sessions.
    package let accounts: AccountService
    /// Notifications: what a product calls to notify an account.
    package let push: PushCenter
    /// The sign-ups waiting for approval, which admins decide on from the app.
    package let signups: SignupQueue
    /// The product served (``Product/homeport`` for Homeport on its own).
    package let product: Product
    /// What the product's handlers and tasks work with.
    package let services: ProductServices
    private let hub: StreamHub
    /// Deletes old notifications and failed pushes.
    let retention: NotificationRetention
    let sender: PushSender?
    private let server: HTTPServer
    /// `/metrics`, on its own address when configured.
    private let metricsServer: HTTPServer?
    /// The product API, on its own address when configured.
    private let productServer: HTTPServer?
    /// The listener serving HTTPS with the installation certificate beside the main one, if any.
    private let installationServer: HTTPServer?
    /// Keeps the installation certificate fresh, when one is served.
    private let installationCertificate: InstallationCertificateRenewal?
    /// Everything that runs beside the requests, listeners included: started in order by
    /// ``start()``, stopped in reverse by ``shutdown()``.
    let background: ServiceGroup
    private let logger: Logger
    /// Every route of the main listener as `METHOD /pattern`, sorted.
    package var routeTable: [String] { (server.responder as? ServerRouter)?.routeTable ?? [] }

    /// Two-factor sign-in's settings: the key of `--secrets-key-file`; on SQLite without one, the
    /// key file beside the database (made on first start; an in-memory database gets a key that
    /// lives as long); on PostgreSQL without one, none (every replica must be given the same
    /// file), which is refused once any account has a second factor. The database remembers its key
    /// and refuses another.
    static func secondFactors(_ configuration: ServerConfiguration, _ database: any Database) throws
        -> SecondFactorSettings?
    {
        let key: SecretsKey
        if let path = configuration.secretsKeyFile {
            key = try SecretsKey.load(path: path, create: false)
        } else if case .sqlite(let path) = configuration.database {
            if path.isEmpty || path == ":memory:" {
                key = try SecretsKey.ephemeral()
            } else {
                let file = path + ".secrets-key"
                // A database whose second factors were sealed with a key file that is gone: say
                // so, rather than make a new key that opens none of them.
                if !FileManager.default.fileExists(atPath: file), let sealed = try SecretsKey.sealed(in: database) {
                    throw ConfigurationError(
                        "the secrets key file \(file) is missing, and \(sealed) sealed with it: restore it from the "
                            + "backup (see docs/deploy.md)")
                }
                key = try SecretsKey.load(path: file, create: true)
            }
        } else {
            if try AuthenticatorStore(database).any() {
                throw ConfigurationError(
                    "accounts on this database sign in with a second factor: give every replica the same --secrets-key-file"
                )
            }
            return nil
        }
        try key.claim(database)
        return SecondFactorSettings(key: key, issuer: configuration.product)
    }

    /// Opens the database, applies pending migrations and prepares the routes; nothing listens yet.
    ///
    /// `product` adds a product's routes, migrations, codes, budgets, features and tasks; the
    /// identity route announces its name and app-info its version, unless `configuration` names
    /// another product. `mailer`, `clock` and `hasher` replace the real ones in tests.
    package init(
        configuration: ServerConfiguration, product: Product = .homeport, logger: Logger,
        mailer: (any Mailer)? = nil, clock: any WallClock = SystemWallClock(), hasher: (any PasswordHashing)? = nil
    ) throws {
        try product.validate()
        var configuration = configuration.serving(product)
        if let socket = configuration.listenSocket, configuration.accounts.publicURL == nil {
            throw ConfigurationError(
                "a server on the Unix socket \(socket) needs a public URL (AccountSettings.publicURL): the address people reach it at through its proxy"
            )
        }
        // Port 0: bound now, so that what names this server (mail links, the replicas table,
        // the trusted origin of the web door's forms) says the port the system picked.
        let bound: BoundListener?
        if configuration.listen.port == 0 && configuration.listenSocket == nil {
            let listener = try BoundListener(host: configuration.listen.host, port: 0)
            configuration.listen.port = listener.port
            bound = listener
        } else {
            bound = nil
        }
        self.product = product
        self.logger = logger
        // A connection for every thread that may need one at once: the workers, the password
        // threads, and the background tasks (heartbeat, stream, sender, retention).
        var databaseOptions = configuration.databaseOptions
        databaseOptions.maximumConnections = max(
            databaseOptions.maximumConnections,
            configuration.http.workerThreads + configuration.http.poolThreads + 4)
        let database = try configuration.database.open(options: databaseOptions)
        for migrator in product.migrators {
            let applied = try migrator.migrate(database)
            if !applied.isEmpty {
                logger.withLabel("homeport.storage").notice(
                    "applied migrations",
                    metadata: [
                        "component": migrator.component, "versions": applied.map(String.init).joined(separator: ","),
                    ])
            }
        }
        self.database = database
        let secondFactors = try Self.secondFactors(configuration, database)
        self.identity = IdentityStore(database: database, secrets: secondFactors?.key)
        if secondFactors == nil {
            logger.withLabel("homeport.identity").notice(
                "no secrets key: the installation proves no key, and clients check its addresses by instanceId alone; give every replica the same --secrets-key-file"
            )
        }
        let installationCertificate = try Self.installationCertificate(
            &configuration, identity: identity, clock: clock, logger: logger)
        self.installationCertificate = installationCertificate
        self.configuration = configuration
        var accountSettings = configuration.accounts
        if accountSettings.publicURL == nil {
            accountSettings.publicURL = "\(configuration.http.tls == nil ? "http" : "https")://\(configuration.listen)"
        }
        // On PostgreSQL the cache serves nothing until its listener hears every replica.
        let cacheAge = Duration.seconds(configuration.sessionCacheSeconds)
        var sessionCache: SessionCache?
        var listener: PostgresListener?
        if configuration.sessionCacheSeconds > 0 {
            if case .postgres(let url) = configuration.database {
                let cache = SessionCache(trusted: false, maximumAge: cacheAge)
                sessionCache = cache
                listener = PostgresListener(url: url, channel: SessionCache.channel) { cache.listenerReported($0) }
            } else {
                sessionCache = SessionCache(trusted: true, maximumAge: cacheAge)
            }
        }
        let chosenMailer: any Mailer
        if let mailer {
            chosenMailer = mailer
        } else if let smtp = configuration.smtp {
            let host = accountSettings.publicURL.flatMap { URL(string: $0)?.host } ?? "localhost"
            chosenMailer = SMTPMailer(settings: smtp, messageHost: host)
        } else {
            chosenMailer = OutboxMailer(directory: configuration.outboxDirectory)
        }
        let mailSender =
            chosenMailer.queues
            ? MailSender(database: database, mailer: chosenMailer, clock: clock, logger: logger) : nil
        self.accounts = AccountService(
            database: database, settings: accountSettings, mailer: chosenMailer, clock: clock, hasher: hasher,
            logger: logger, secondFactors: secondFactors)
        // The one session reader, for every door and the API prefix (a product's routes included).
        let reader = SessionReader(database: database, clock: clock, cache: sessionCache)
        self.push = PushCenter(
            database: database, identity: identity, settings: configuration.push, clock: clock,
            rateLimits: configuration.accounts.rateLimits, logger: logger)
        var signups = SignupQueue(
            database: database, push: push, clock: clock, logger: logger.withLabel("homeport.accounts"))
        signups.verifiedOnly = configuration.accounts.emailVerification == .code
        self.signups = signups
        let queue = signups
        accounts.newcomers.listen { queue.announce(email: $0) }
        // `push send` then notifies as this process does.
        try ServingPushSettings.record(configuration.push, in: database, now: clock.unixSeconds)
        self.hub = StreamHub(
            database: database, identity: identity, settings: configuration.push, clock: clock, logger: logger)
        self.retention = NotificationRetention(
            database: database, settings: configuration.push, clock: clock, logger: logger)
        let pushLogger = logger.withLabel("homeport.push")
        // Each push service's transport: this process's own keys first, then the gateway for
        // what it carries.
        var routes: [PushProvider: any PushTransport] = [:]
        if let web = configuration.push.webPush {
            routes[.webpush] = try WebPushDelivery(settings: web, clock: clock, logger: pushLogger)
        }
        if let fcm = configuration.push.fcm {
            routes[.fcm] = try FCMDelivery(settings: fcm, database: database, clock: clock)
        }
        if let gateway = configuration.push.gateway {
            let carried = gateway.providers.subtracting(routes.keys)
            try PushGatewaySync(database).serve(gateway: gateway, providers: carried, now: clock.unixSeconds)
            let client = try PushGatewayClient(
                database: database, settings: gateway, providers: carried, clock: clock, logger: pushLogger)
            for provider in carried { routes[provider] = client }
        } else if let apns = configuration.push.apns {
            try PushGatewaySync(database).serveWithoutGateway()
            routes[.apns] = try APNsDelivery(database: database, settings: apns, clock: clock, logger: pushLogger)
        }
        let transport: (any PushTransport)? =
            routes.count == 1 && routes[.apns] != nil ? routes[.apns] : routes.isEmpty ? nil : PushDispatch(routes)
        if let transport {
            self.sender = try PushSender(
                database: database, transport: transport, maximumAttempts: configuration.push.maximumAttempts,
                clock: clock, logger: logger)
        } else {
            self.sender = nil
            pushLogger.notice(
                configuration.push.topic == nil
                    ? "pushes are off: no APNs key or push gateway configured (registrations, the catalogue and the in-app stream work)"
                    : "pushes are queued but not sent by this process: no APNs key or push gateway configured")
        }
        self.services = ProductServices(
            database: database, notifications: push, identity: identity, clock: clock,
            logger: logger.withLabel(product.name),
            budgets: Dictionary(
                uniqueKeysWithValues: product.budgets.map {
                    ($0.name, (configuration.accounts.rateLimits.productLimits[$0.name] ?? $0.limit, $0.key))
                }))
        var productRoutes = ProductRoutes(services: services)
        try product.routes(&productRoutes)
        var router = ServerRouter()
        router.addHealthRoute()
        router.addReadinessRoute(database: database, migrators: product.migrators)
        router.addIdentityRoute(
            store: identity, product: configuration.product, logger: logger,
            budget: ChallengeBudget(configuration.accounts.rateLimits.identityChallengePerAddress))
        router.addAPI(
            reader: reader, identity: identity, product: configuration.product,
            invitations: configuration.accounts.invitations,
            version: product.isHomeport ? ServerDefaults.version : product.version,
            features: AppInfoEndpoint.features + product.features.filter { !AppInfoEndpoint.features.contains($0) },
            logger: logger)
        router.addPush(push, hub: hub)
        router.addAdmin(signups)
        router.addInvitations(
            AppInvitations(
                policy: configuration.accounts.invitations, database: database, clock: clock, random: accounts.random,
                logger: logger.withLabel("homeport.accounts"), rateLimits: configuration.accounts.rateLimits,
                publicURL: accounts.settings.reachablePublicURL, product: configuration.product,
                deliver: accounts.deliver))
        if let gateway = configuration.push.gateway {
            router.addPushGatewayEnrollment(identity: identity, credential: gateway.credential)
        }
        try router.addProduct(productRoutes.declared)
        router.addAppDoor(accounts, reader: reader)
        router.addWebDoor(
            accounts, reader: reader, product: configuration.product,
            csrfKey: try ServerSecrets(database, logger: logger.withLabel("homeport.server")).secret(named: "csrf"),
            identity: identity, push: push, signups: signups)
        let server = HTTPServer(
            configuration: configuration.effectiveHTTP, responder: router, logger: logger, bound: bound)
        self.server = server
        if let address = configuration.metricsListen {
            var metricsRouter = Router<EmptyRequestContext>()
            metricsRouter.get("/metrics") { _, _ in
                let text =
                    server.metrics.render()
                    + ServerMetrics.render(
                        poolWaits: database.poolWaits,
                        outbox: (try? PushOutbox(database).summary()).map { summary in
                            OutboxSummary.states.map { ($0, summary.total($0)) }
                        })
                return HTTPResponse(
                    status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                    body: Data(text.utf8))
            }
            var http = HTTPServerConfiguration(host: address.host, port: address.port, workerThreads: 1)
            http.poolThreads = 1
            metricsServer = HTTPServer(configuration: http, responder: metricsRouter, logger: logger)
            server.metrics.enable()
        } else {
            metricsServer = nil
        }
        if configuration.productListen != nil || configuration.productSocket != nil {
            let address = configuration.productListen ?? ListenAddress(host: "127.0.0.1", port: 0)
            var http = HTTPServerConfiguration(host: address.host, port: address.port, workerThreads: 2)
            http.unixSocketPath = configuration.productSocket
            http.accessLogDelay = configuration.http.accessLogDelay
            // The largest catalogue declaration the documented rules allow (a notification is smaller).
            http.maxBodyBytes = ProductCatalogueRequest.maximumBodyBytes
            http.poolThreads = 1
            productServer = HTTPServer(
                configuration: http, responder: ProductAPI(database: database, push: push, clock: clock).router(),
                logger: logger)
        } else {
            productServer = nil
        }
        if let address = configuration.installationTLS.listen, let installationCertificate {
            var http = configuration.http
            (http.host, http.port, http.unixSocketPath) = (address.host, address.port, nil)
            http.tls = installationCertificate.certificate.credentials
            let installationServer = HTTPServer(configuration: http, responder: router, logger: logger)
            installationCertificate.serve(installationServer)
            self.installationServer = installationServer
        } else {
            installationServer = nil
        }
        if configuration.installationTLS.onListen { installationCertificate?.serve(server) }
        let heartbeat = try ReplicaHeartbeat(
            database: database, identity: identity, timing: configuration.heartbeat,
            listen: configuration.listenSocket ?? configuration.listen.description, logger: logger)
        let services = services
        let productTasks = product.tasks.map { task in
            RepeatingTask(
                "\(product.name).\(task.name)", after: task.interval, every: task.interval,
                failed: { services.logger.warning("\(task.name) failed", metadata: ["error": String(describing: $0)]) }
            ) { try task.work(services) }
        }
        // Started in this order, stopped in reverse: the session listener and the heartbeat start
        // before the server listens (a replica is registered before it answers) and stop after
        // it has drained; the push sender stops after the listeners, whose requests in flight may
        // queue pushes; a product's tasks stop first, then the stream hub, ending its streams.
        let http = { (name: String, server: HTTPServer) in
            HTTPListenerService(name: name, server: server, logger: logger)
        }
        let ordered: [(any Service)?] = [
            listener, heartbeat, sender,
            productServer.map { http("homeport.product-api", $0) },
            metricsServer.map { http("homeport.metrics", $0) },
            http("homeport.http", server),
            installationServer.map { http("homeport.installation-https", $0) },
            installationCertificate?.service(),
            mailSender?.service(), retention.service(), hub,
        ]
        let debug = logger.withLabel("homeport.server")
        background = ServiceGroup(ordered.compactMap { $0 } + productTasks) { verb, name in
            debug.debug("\(verb) \(name)")
        }
    }

    /// Registers this replica's heartbeat, then starts listening and the background work;
    /// returns the bound port.
    @discardableResult
    package func start() throws -> Int {
        let (hub, sender) = (hub, sender)
        push.onNotify {
            hub.poke()
            sender?.wake()
        }
        try background.start()
        return server.port
    }

    /// The bound port (0 before ``start()``, and on a Unix socket).
    package var port: Int { server.port }

    /// The bound port of `/metrics`, when it is served.
    package var metricsPort: Int? { metricsServer?.port }

    /// The bound port of the product API, when it is served.
    package var productPort: Int? { configuration.productSocket == nil ? productServer?.port : nil }

    /// The bound port of the listener serving HTTPS with the installation certificate beside the
    /// main one, when there is one.
    package var installationPort: Int? { installationServer?.port }

    /// Makes a new installation certificate and serves it when the one served is due (a third of
    /// its life left, other names, another key); true when it did. The server checks every hour.
    package func renewInstallationCertificate() throws -> Bool {
        try installationCertificate?.renewIfDue() ?? false
    }

    /// Serves new connections with a renewed certificate and key; connections open now finish
    /// on the old ones. Throws, and keeps the old ones, when the new pair will not serve.
    package func reloadTLS(_ credentials: TLSCredentials) throws {
        try server.reloadTLS(credentials)
    }

    /// Stops gracefully: no new connections, requests in flight finish, this replica's heartbeat
    /// row goes, then the database closes.
    package func shutdown() {
        background.stop()
        logger.withLabel("homeport.storage").notice(
            "database pool", metadata: ["waits": String(database.poolWaits)])
        database.close()
    }
}
