import Dispatch
import Foundation
import HomeportCommandLine
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportServer
import HomeportStorage
import HomeportWire

/// `homeport-server gateway serve|servers`: a push gateway that holds the app developer's APNs
/// key for servers run by other people, and the enrollment of those servers.
package enum GatewayCommand {
    static let databaseOption = CommandSpec.Option.value(
        "database", "URL", help: "The gateway's database: sqlite:PATH or postgres://USER@HOST:PORT/DB.",
        environment: "HOMEPORT_GATEWAY_DATABASE", default: "sqlite:$HOMEPORT_DATA_DIR/gateway.sqlite")

    /// The Web Push options of `serve`, but for the switch that lets pushes into private networks:
    /// its variable is the gateway's own, so a household server's setting in a shared
    /// environment never opens a gateway on the internet to its own network.
    static let gatewayWebPush = PushOptions.webPush.map { option in
        var option = option
        if option.name == "webpush-allow-private-endpoints" {
            option.environment = "HOMEPORT_GATEWAY_WEBPUSH_ALLOW_PRIVATE_ENDPOINTS"
        }
        return option
    }

    /// `--apns-topic` as the gateway takes it: required, the one app it pushes for.
    static let topic = {
        var option = PushOptions.topic
        option.help =
            "The app's bundle id: the gateway pushes for this app alone, and refuses a push to another topic (required)."
        return option
    }()

    static let serveSpec = CommandSpec(
        name: "homeport-server gateway serve",
        summary:
            "Run a push gateway: servers enrolled with 'gateway servers add' send their pushes here, and it sends them to APNs with the app's key (and to FCM and Web Push with the app's service account and VAPID key, when given).",
        options: [
            .value(
                "listen", "HOST:PORT", help: "Address to listen on; port 0 picks a free port.",
                environment: "HOMEPORT_GATEWAY_LISTEN", default: "127.0.0.1:8090"),
            databaseOption,
            topic, PushOptions.pushKey,
        ] + PushOptions.apnsKey + PushOptions.fcm + gatewayWebPush + [
            .value(
                "pushes-per-minute", "N", help: "Pushes one enrolled server may send a minute, over every replica.",
                environment: "HOMEPORT_GATEWAY_PUSHES_PER_MINUTE", default: "60000"),
            .value(
                "devices-per-server", "N", help: "Devices one enrolled server may register.",
                environment: "HOMEPORT_GATEWAY_DEVICES_PER_SERVER", default: "100000"),
            .value(
                "device-cache-mib", "N",
                help:
                    "MiB of devices kept in memory, over every server, so a push's device is found without a database read (0: none; an APNs device takes about 170 bytes).",
                environment: "HOMEPORT_GATEWAY_DEVICE_CACHE_MIB", default: "48"),
            .value(
                "senders", "N",
                help:
                    "Batches sent to APNs at once (each on its own HTTP/2 connection); one server has at most four of them, and never all but two (at least one).",
                environment: "HOMEPORT_GATEWAY_SENDERS", default: "6"),
            .value(
                "workers", "N", help: "Worker threads.", environment: "HOMEPORT_WORKERS", default: "the number of cores"
            ),
            .value(
                "tls-cert", "FILE", help: "Serve HTTPS with this certificate chain (PEM).",
                environment: "HOMEPORT_TLS_CERT"),
            .value(
                "tls-key", "FILE", help: "The certificate's private key (PEM; one every user may open is warned of).",
                environment: "HOMEPORT_TLS_KEY"),
            .value(
                "metrics-listen", "HOST:PORT", help: "Serve /metrics (per-server counters) on this address.",
                environment: "HOMEPORT_METRICS_LISTEN"),
            .value(
                "log-level", "LEVEL", help: "debug, info, notice, warning or error.",
                environment: "HOMEPORT_LOG_LEVEL", default: "info"),
        ],
        discussion: """
            Servers reach it with 'homeport-server serve --push-gateway URL --push-gateway-credential-file FILE'.
            Serve it over HTTPS (--tls-cert, or a proxy that terminates TLS): credentials and payloads cross it.
            Replicas share one PostgreSQL database: a revocation holds on every one at once.
            With --fcm-service-account-file it sends to the app's Android installs through FCM; servers
            then add --push-gateway-fcm-project PROJECT. With --vapid-key-file and --vapid-subject it
            sends Web Pushes (browsers, UnifiedPush); servers then add --push-gateway-webpush-key KEY,
            the key 'homeport-server push vapid-key --vapid-key-file FILE' prints.

            Example:
              homeport-server gateway serve --listen 0.0.0.0:8443 --tls-cert gw.pem --tls-key gw.key \\
                --apns-key-file AuthKey_ABC123DEFG.p8 --apns-key-id ABC123DEFG --apns-team-id DEF123GHIJ \\
                --apns-topic net.example.books
            """)

    static func serversSpec(_ action: String) -> CommandSpec {
        switch action {
        case "add":
            CommandSpec(
                name: "homeport-server gateway servers add",
                summary:
                    "Enroll a server from its own address: the gateway reads its installation id and its credential's SHA-256 there (the credential never leaves the server).",
                options: [
                    .value(
                        "url", "URL",
                        help:
                            "The server's address, as its users' app reaches it: https:// (or http:// on a loopback address)."
                    ),
                    .value("name", "NAME", help: "A name for the server: 1–64 of a-z 0-9 . _ -."),
                    .value(
                        "instance-id", "UUID",
                        help:
                            "The installation id its operator gave you; enrolment stops if the address answers another."
                    ),
                    .value(
                        "ca-file", "FILE", help: "The CA to trust for the server's address, instead of the system's."),
                    databaseOption,
                ],
                discussion: """
                    The server's operator starts it first with --push-gateway URL and
                    --push-gateway-credential-file FILE (the file is made if missing). An installation is
                    enrolled once: a second address that claims the same id is refused until the first
                    enrolment is revoked.
                    """)
        case "revoke":
            CommandSpec(
                name: "homeport-server gateway servers revoke",
                summary: "Revoke a server: its pushes are refused at once on every gateway replica; the others go on.",
                arguments: [.init("NAME", help: "The server's name.")], options: [databaseOption])
        default:
            CommandSpec(
                name: "homeport-server gateway servers list",
                summary: "List enrolled servers and what each sent (never the credentials).",
                options: [
                    databaseOption,
                    .flag(
                        "json",
                        help:
                            "Print a JSON array of {name, instanceId, url, createdAt, revokedAt, devices, delivered, refused, failed, lastPushAt}."
                    ),
                ])
        }
    }

    static let overview = """
        Usage: homeport-server gateway serve [options]
               homeport-server gateway servers add|list|revoke [options]

        A push gateway holds the app developer's APNs key (and FCM service account and VAPID key)
        for Homeport servers run by other people.
        Each server is enrolled from its own address, by its installation id and the digest of the
        credential it holds: it may push only as that installation (the payload's s), only to
        devices it registered, at its own rate, and a revocation cuts it off alone.
        """

    /// `gateway`, as `homeport-server` adds it to the server's command line.
    package static let added = AddedCommand(
        "gateway",
        overview: [
            "gateway serve     Run a push gateway that holds the app's APNs key for servers run by others.",
            "gateway servers   Enroll, list or revoke the servers that push through a gateway.",
        ],
        run: { try run($0, environment: $1) })

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        switch arguments.first {
        case "serve": return try serve(Array(arguments.dropFirst()), environment: environment)
        case "servers": return try servers(Array(arguments.dropFirst()), environment: environment)
        case nil, "-h", "--help", "help":
            ServerCLI.line(overview)
            return arguments.isEmpty ? .usage : .success
        case let other?: throw UsageError("unknown gateway command '\(other)'; use serve or servers")
        }
    }

    static func database(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> DatabaseURL
    {
        guard let text = parsed.value("database", spec: spec, environment: environment) else {
            let directory = ServerDefaults.dataDirectory(environment: environment)
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            return .sqlite(path: directory + "/gateway.sqlite")
        }
        do {
            return try DatabaseURL(parsing: text)
        } catch let error as StorageError {
            throw UsageError(error.description)
        }
    }

    static func servers(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard
            let (action, rest) = try ServerCLI.action(
                of: "gateway servers", among: ["add", "list", "revoke"], overview: overview, arguments)
        else { return .success }
        let spec = serversSpec(action)
        guard let parsed = try ServerCLI.parse(spec, rest) else { return .success }
        var fetched: (url: String, name: String, enrollment: PushGatewayEnrollment)?
        if action == "add" {
            guard let url = parsed.value("url", spec: spec, environment: [:]) else {
                throw UsageError("gateway servers add needs --url, the server's address")
            }
            guard let name = parsed.value("name", spec: spec, environment: [:]) else {
                throw UsageError("gateway servers add needs --name NAME")
            }
            guard isName(name) else { throw UsageError("a server's name is 1–64 of a-z 0-9 . _ -, not '\(name)'") }
            var expected: InstanceID?
            if let text = parsed.value("instance-id", spec: spec, environment: [:]) {
                guard let id = InstanceID(text) else { throw UsageError("--instance-id must be a UUID, not '\(text)'") }
                expected = id
            }
            guard PushGatewaySettings.isAllowedURL(url) else {
                throw UsageError(
                    "--url must be the server's https:// address (or http:// on a loopback address), not '\(url)'")
            }
            let caFile = parsed.value("ca-file", spec: spec, environment: [:])
            if let caFile, !FileManager.default.isReadableFile(atPath: caFile) {
                throw UsageError("cannot read the CA file \(caFile)")
            }
            let enrollment: PushGatewayEnrollment
            do {
                enrollment = try GatewayEnrollment.fetch(url, caFile: caFile)
            } catch let refusal as GatewayEnrollment.Refusal {
                ServerCLI.error("homeport-server: \(refusal)")
                return .failure
            }
            if let expected, expected != enrollment.instanceId {
                ServerCLI.error(
                    "homeport-server: \(url) answers installation \(enrollment.instanceId), not \(expected): not enrolled"
                )
                return .failure
            }
            fetched = (url, name, enrollment)
        }
        let database = try self.database(parsed, spec, environment).open()
        defer { database.close() }
        try GatewaySchema.migrator.migrate(database)
        let store = GatewayServerStore(database)
        let now = Int64(Date().timeIntervalSince1970)
        switch action {
        case "add":
            guard let (url, name, enrollment) = fetched else { return .usage }
            let instance = enrollment.instanceId.description
            let outcome = try database.transaction {
                try GatewayServerStore($0).add(
                    name: name, instanceID: instance, url: url, credentialHash: enrollment.credentialSha256, now: now)
            }
            switch outcome {
            case .added:
                ServerCLI.line("\(name): enrolled as \(instance) from \(url)")
            case .nameTaken:
                ServerCLI.error(
                    "homeport-server: a server named '\(name)' is enrolled (revoked servers keep their name)")
                return .failure
            case .instanceTaken(let other):
                ServerCLI.error(
                    "homeport-server: installation \(instance) is enrolled already, as '\(other.name)' from \(other.url); "
                        + "if this address is the real one, revoke '\(other.name)' first")
                return .failure
            case .credentialTaken:
                ServerCLI.error(
                    "homeport-server: the credential \(url) publishes is another enrolled server's (now or once): "
                        + "not enrolled. Its digest is public, so another address may have published it first; "
                        + "the server's operator deletes its credential file (a new one is made at the next start) "
                        + "and asks again")
                return .failure
            }
        case "revoke":
            let name = parsed.positionals[0]
            guard try database.transaction({ try GatewayServerStore($0).revoke(name: name, now: now) }) else {
                ServerCLI.error("homeport-server: no enrolled server that may push is named '\(name)'")
                return .failure
            }
            ServerCLI.line("\(name): revoked")
        default:
            try list(store.all(), devices: GatewayDeviceStore(database), json: parsed.flag("json"))
        }
        return .success
    }

    private static func list(_ servers: [GatewayServer], devices: GatewayDeviceStore, json: Bool) throws {
        let formatter = ISO8601DateFormatter()
        let date = { (seconds: Int64) in formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds))) }
        if json {
            let objects: [[String: Any]] = try servers.map {
                [
                    "name": $0.name, "instanceId": $0.instanceID, "url": $0.url, "createdAt": date($0.createdAt),
                    "revokedAt": $0.revokedAt.map(date) ?? NSNull(), "devices": try devices.count(server: $0.id),
                    "delivered": $0.delivered, "refused": $0.refused, "failed": $0.failed,
                    "lastPushAt": $0.lastPushAt.map(date) ?? NSNull(),
                ]
            }
            try ServerCLI.printJSON(objects)
        } else if servers.isEmpty {
            ServerCLI.line("no servers enrolled yet")
        } else {
            for server in servers {
                ServerCLI.line(
                    "\(server.name)  \(server.instanceID)  \(server.url)  devices \(try devices.count(server: server.id))  "
                        + "delivered \(server.delivered)  refused \(server.refused)  failed \(server.failed)"
                        + (server.revokedAt.map { "  revoked \(date($0))" } ?? ""))
            }
        }
    }

    static func isName(_ name: String) -> Bool {
        (1...64).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || [0x2E, 0x5F, 0x2D].contains($0)
            }
    }

    static func serve(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        let spec = serveSpec
        guard let parsed = try ServerCLI.parse(spec, arguments) else { return .success }
        let configuration = try configuration(parsed, spec, environment)
        let level = try ServerCLI.logLevel(parsed, spec, environment) ?? .info
        let logger = Logger(label: "homeport.gateway", minimumLevel: level)
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        // A log's reader that goes away fails the writes after it, not the gateway.
        signal(SIGPIPE, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        let sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }
        let gateway = try PushGateway(configuration: configuration, logger: logger)
        if let warning = ServeCommand.exposedTLSKey(parsed, spec: spec, environment: environment) {
            logger.warning("\(warning)")
        }
        let port = try gateway.start()
        let shown = ListenAddress(host: configuration.http.host, port: port)
        ServerCLI.line(
            "homeport-server gateway listening on \(configuration.http.tls == nil ? "http" : "https")://\(shown) "
                + "(topic \(configuration.topic), database \(configuration.database))")
        if let metricsPort = gateway.metricsPort, let address = configuration.metricsListen {
            logger.notice(
                "serving /metrics",
                metadata: ["address": ListenAddress(host: address.host, port: metricsPort).description]
            )
        }
        if configuration.http.tls == nil && !ServeCommand.isLoopback(configuration.http.host) {
            logger.warning(
                "serving plain HTTP on a non-loopback address: credentials and payloads cross the network in clear; use --tls-cert and --tls-key, or a proxy that terminates TLS"
            )
        }
        stop.wait()
        logger.notice("shutting down: no new connections, finishing requests in flight")
        gateway.shutdown()
        withExtendedLifetime(sources) {}
        return .success
    }

    static func configuration(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String]) throws
        -> PushGatewayConfiguration
    {
        guard let topic = parsed.value("apns-topic", spec: spec, environment: environment) else {
            throw UsageError("gateway serve needs --apns-topic, the app's bundle id")
        }
        guard PushOptions.isBundleID(topic) else {
            throw UsageError("--apns-topic must be the app's bundle id, such as net.example.books, not '\(topic)'")
        }
        guard let apns = try PushOptions.apns(parsed, spec, environment, topic: topic) else {
            throw UsageError("gateway serve needs the APNs key: --apns-key-file, --apns-key-id and --apns-team-id")
        }
        var http = HTTPServerConfiguration(host: "127.0.0.1", port: 8090)
        // A batch of 1000 pushes of up to 4 KiB each, with its JSON.
        http.maxBodyBytes = 8 << 20
        http.maxBufferedBodyBytes = 256 << 20
        http.poolThreads = 6
        http.poolQueueLimit = 256
        if let text = parsed.value("listen", spec: spec, environment: environment) {
            do {
                let address = try ListenAddress(parsing: text)
                (http.host, http.port) = (address.host, address.port)
            } catch {
                throw UsageError(String(describing: error))
            }
        }
        if let workers = try ServerCLI.integer("workers", parsed, spec, environment, range: 1...256) {
            http.workerThreads = workers
        }
        if let senders = try ServerCLI.integer("senders", parsed, spec, environment, range: 1...64) {
            http.poolThreads = senders
        }
        http.tls = try ServeCommand.tlsCredentials(parsed, spec: spec, environment: environment)
        var configuration = PushGatewayConfiguration(
            http: http, database: try database(parsed, spec, environment), apns: apns, topic: topic)
        if let appDataKey = try PushOptions.appDataKey(parsed, spec, environment) {
            configuration.appDataKey = appDataKey
        }
        configuration.fcm = try PushOptions.fcm(parsed, spec, environment)
        configuration.webPush = try PushOptions.webPush(parsed, spec, environment)
        if let rate = try ServerCLI.integer("pushes-per-minute", parsed, spec, environment, range: 1...100_000_000) {
            configuration.pushesPerMinute = rate
        }
        if let count = try ServerCLI.integer("devices-per-server", parsed, spec, environment, range: 1...100_000_000) {
            configuration.devicesPerServer = count
        }
        if let mebibytes = try ServerCLI.integer("device-cache-mib", parsed, spec, environment, range: 0...1_048_576) {
            configuration.deviceCacheBytes = mebibytes << 20
        }
        if let text = parsed.value("metrics-listen", spec: spec, environment: environment) {
            do {
                configuration.metricsListen = try ListenAddress(parsing: text)
            } catch {
                throw UsageError("--metrics-listen: \(error)")
            }
        }
        return configuration
    }
}
