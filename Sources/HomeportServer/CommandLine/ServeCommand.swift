import Dispatch
import Foundation
import HomeportCommandLine
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire

/// `homeport-server serve`
package enum ServeCommand {
    /// How long an access-log line waits at most to be written with others.
    static let accessLogDelay: Duration = .milliseconds(100)

    static let spec = CommandSpec(
        name: "homeport-server serve",
        summary: "Run the Homeport HTTP server. Pending migrations are applied first.",
        options: [
            .value(
                "listen", "HOST:PORT|/PATH",
                help:
                    "Address to listen on; port 0 picks a free port. Or a Unix socket at /PATH (mode 0660) for a reverse proxy on this host: its X-Forwarded-For (--forwarded-header) names the client; needs --public-url.",
                environment: "HOMEPORT_LISTEN", default: ServerDefaults.listen.description),
            .value(
                "scheduling", "normal|batch",
                help:
                    "How Linux schedules the worker threads: batch has a request's arrival not preempt the proxy that sent it (fewer switches between the two on shared cores).",
                environment: "HOMEPORT_SCHEDULING", default: "batch on a Unix socket, else normal"),
            ServerCLI.databaseOption,
            .value(
                "product", "NAME", help: "Product name the identity route announces.",
                environment: "HOMEPORT_PRODUCT", default: HomeportProtocol.defaultProduct),
            .value(
                "workers", "N", help: "Worker threads.", environment: "HOMEPORT_WORKERS",
                default: "the number of cores"),
            .value(
                "max-body-bytes", "N", help: "Largest request body; larger ones get 413.",
                environment: "HOMEPORT_MAX_BODY_BYTES", default: "1048576"),
            .value(
                "max-header-bytes", "N",
                help: "The largest request target (414 past it) and header block (431 past it).",
                environment: "HOMEPORT_MAX_HEADER_BYTES", default: "16384"),
            .value(
                "idle-timeout", "SECONDS", help: "Close a connection silent this long.",
                environment: "HOMEPORT_IDLE_TIMEOUT", default: "30"),
            .value(
                "max-connections", "N",
                help: "Connections open at once; past it, a new one replaces one waiting for a request.",
                environment: "HOMEPORT_MAX_CONNECTIONS", default: "1000"),
            .value(
                "max-connections-per-address", "N",
                help: "Connections open at once from one client address (IPv6: one /64); 0 for no cap.",
                environment: "HOMEPORT_MAX_CONNECTIONS_PER_ADDRESS", default: "100"),
            .value(
                "max-streams-per-session", "N",
                help:
                    "In-app notification streams one session holds open at once; a newer one ends the oldest. 0 for no cap.",
                environment: "HOMEPORT_MAX_STREAMS_PER_SESSION", default: "2"),
            .value(
                "max-streams-per-account", "N",
                help:
                    "In-app notification streams one account holds open at once (per process); one more is refused with 429. 0 for no cap.",
                environment: "HOMEPORT_MAX_STREAMS_PER_ACCOUNT", default: "10"),
            .value(
                "max-streams-per-address", "N",
                help:
                    "In-app notification streams one client address (IPv6: one /64; behind a trusted proxy, the forwarded one) holds open at once; 0 for no cap.",
                environment: "HOMEPORT_MAX_STREAMS_PER_ADDRESS", default: "50"),
            .value(
                "header-timeout", "SECONDS",
                help: "Time a connection has to send a whole request head, from opening or from its last answer.",
                environment: "HOMEPORT_HEADER_TIMEOUT", default: "20"),
            .value(
                "body-timeout", "SECONDS", help: "Time a request has to send its whole body once its head is in.",
                environment: "HOMEPORT_BODY_TIMEOUT", default: "30"),
            .value(
                "min-body-rate", "BYTES",
                help:
                    "Bytes a second a request body must average once it has had 5 seconds; slower, the connection is closed. 0 checks no rate.",
                environment: "HOMEPORT_MIN_BODY_RATE", default: "1024"),
            .value(
                "max-buffered-body-bytes", "N",
                help: "Request bodies held in memory at once, all connections together; beyond it, 503.",
                environment: "HOMEPORT_MAX_BUFFERED_BODY_BYTES", default: "67108864"),
            .value(
                "signup", "POLICY", help: "open (sign in at once), approval (wait for 'users approve') or closed.",
                environment: "HOMEPORT_SIGNUP", default: "approval"),
            .value(
                "email-verification", "MODE",
                help:
                    "none, or code: a sign-up (or a sign-in to an unverified address) gets a mailed code to enter before its session begins.",
                environment: "HOMEPORT_EMAIL_VERIFICATION", default: "none"),
            .value(
                "invitations", "WHO",
                help:
                    "Who may invite from the app (POST /api/v1/invitations): admins (the admin group), members (anyone signed in, giving only groups they are in) or off. The operator invites with 'invites create' whatever it says.",
                environment: "HOMEPORT_INVITATIONS", default: "admins"),
            .value(
                "session-lifetime", "DURATION", help: "Fixed session lifetime: 365d, 12h, 30m or seconds.",
                environment: "HOMEPORT_SESSION_LIFETIME", default: "365d"),
            .value(
                "password-iterations", "N", help: "PBKDF2-SHA256 iterations for new password hashes.",
                environment: "HOMEPORT_PASSWORD_ITERATIONS", default: "600000"),
            .value(
                "mail-url", "URL",
                help:
                    "Send mail through this SMTP relay: smtp://[USER@]HOST:PORT (STARTTLS when offered) or smtps://…; without it, mail goes to --outbox.",
                environment: "HOMEPORT_MAIL_URL"),
            .value(
                "mail-from", "ADDRESS", help: "The sender of the mail (with --mail-url).",
                environment: "HOMEPORT_MAIL_FROM", default: "homeport@HOST of --public-url, or homeport@localhost"),
            .value(
                "mail-password-file", "FILE",
                help:
                    "A file holding the relay password of the URL's user; never logged (one every user may open is warned of).",
                environment: "HOMEPORT_MAIL_PASSWORD_FILE"),
            .value(
                "mail-starttls", "try|required",
                help: "On smtp://, use STARTTLS when the relay offers it, or refuse to send without it.",
                environment: "HOMEPORT_MAIL_STARTTLS", default: "try"),
            .value(
                "product-listen", "HOST:PORT|/PATH",
                help:
                    "Serve the product API (/product/v1/…, product keys) on this address, or on a Unix socket at /PATH (mode 0660), apart from the app's; off by default.",
                environment: "HOMEPORT_PRODUCT_LISTEN"),
            .value(
                "metrics-listen", "HOST:PORT",
                help: "Serve GET /metrics (Prometheus text) on this address, apart from the API; off by default.",
                environment: "HOMEPORT_METRICS_LISTEN"),
            .value(
                "tls-cert", "FILE",
                help: "Serve HTTPS with this certificate chain (PEM); SIGHUP reads it and --tls-key again.",
                environment: "HOMEPORT_TLS_CERT"),
            .value(
                "tls-key", "FILE",
                help: "The certificate's private key (PEM, unencrypted; one every user may open is warned of).",
                environment: "HOMEPORT_TLS_KEY"),
            .value(
                "tls-priority", "STRING",
                help:
                    "The GnuTLS priority string for HTTPS (default: TLS 1.2 and 1.3, forward-secret key exchanges, AEAD ciphers only).",
                environment: "HOMEPORT_TLS_PRIORITY"),
            .flag(
                "tls-installation",
                help:
                    "Serve --listen over HTTPS with a certificate the server makes from the installation key (self-signed, renewed by itself): apps that know the key accept it on any name or LAN address, without a certificate authority. Needs the secrets key.",
                environment: "HOMEPORT_TLS_INSTALLATION"),
            .value(
                "installation-listen", "HOST:PORT",
                help:
                    "Also serve the app over HTTPS with the installation's certificate on this address (say, the LAN's), beside --listen and its own certificate or proxy; off by default.",
                environment: "HOMEPORT_INSTALLATION_LISTEN"),
            .value(
                "trusted-proxies", "CIDR,…",
                help:
                    "Reverse proxies whose --forwarded-header names the client (for rate limits, caps and the log); from anyone else it is ignored.",
                environment: "HOMEPORT_TRUSTED_PROXIES"),
            .value(
                "forwarded-header", "x-forwarded-for|forwarded",
                help:
                    "The one header a trusted proxy names the client in (the rightmost hop that is not a trusted proxy); the other is ignored, whoever sends it.",
                environment: "HOMEPORT_FORWARDED_HEADER", default: "x-forwarded-for"),
            .value(
                "session-cache-seconds", "N",
                help:
                    "How long a session read from the database serves from memory; 0 reads it every time (see the operator guide).",
                environment: "HOMEPORT_SESSION_CACHE_SECONDS", default: "1"),
            .value(
                "password-threads", "N",
                help: "Threads for requests that hash a password (sign-in, sign-up, password change and reset).",
                environment: "HOMEPORT_PASSWORD_THREADS", default: "one fewer than the cores, at least 1"),
            .value(
                "password-queue", "N",
                help: "Such requests that may wait for a thread; beyond it, 503 with Retry-After.",
                environment: "HOMEPORT_PASSWORD_QUEUE", default: "64"),
            .value(
                "rate-limits", "LIST", help: "Overrides, NAME=N/SECONDS,… (names in the operator guide).",
                environment: "HOMEPORT_RATE_LIMITS"),
            .value(
                "public-url", "URL",
                help: "Address people reach the server at (mail links; https makes cookies Secure).",
                environment: "HOMEPORT_PUBLIC_URL",
                default: "http://LISTEN, https://LISTEN with --tls-cert; required on a socket"),
            .value(
                "outbox", "DIR", help: "Directory the mailer writes outgoing mail to (.eml files).",
                environment: "HOMEPORT_OUTBOX", default: "$HOMEPORT_DATA_DIR/outbox"),
            .value(
                "secrets-key-file", "FILE",
                help:
                    "The key that seals two-factor secrets (32+ bytes, mode 0600; `openssl rand -hex 32`). Give every replica the same file; without it, SQLite uses DATABASE.secrets-key (made on first start) and PostgreSQL offers no two-factor sign-in.",
                environment: "HOMEPORT_SECRETS_KEY_FILE"),
            .value(
                "log-level", "LEVEL", help: "debug, info, notice, warning or error (info logs every request).",
                environment: "HOMEPORT_LOG_LEVEL", default: "info"),
        ] + PushOptions.all,
        discussion: """
            The data directory is $HOMEPORT_DATA_DIR, else $XDG_DATA_HOME/homeport, else ~/.local/share/homeport.
            On start the server prints one line to standard output:
              homeport-server listening on http://HOST:PORT  (https:// with --tls-cert; unix:/PATH on a socket)
            Logs (one line per request, never a credential) go to standard error.
            SIGINT or SIGTERM stops it gracefully: no new connections, requests in flight finish.
            SIGHUP reads --tls-cert and --tls-key again (a renewal): new connections get the new pair,
            open ones finish on the old. The installation's certificate (--tls-installation,
            --installation-listen) lives 90 days and is made anew, the same way, 30 days before its
            end, when the machine's addresses change, or when the installation key does.

            Example:
              homeport-server serve --listen 0.0.0.0:8080 --database postgres://homeport@db/homeport
            """)

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(spec, arguments) else { return .success }
        let configuration = try configuration(parsed, environment: environment)
        // Its variable's word was checked with the rest of the command line (PushOptions.webPush).
        let privateEndpointsIdle =
            try parsed.flag("webpush-allow-private-endpoints", spec: spec, environment: environment)
            && configuration.push.webPushKey == nil
        let logger = Logger(label: "homeport.server", minimumLevel: configuration.logLevel)
        tuneAllocator(environment: environment)

        // Handle the signals on a queue rather than in a C handler, and before anything listens.
        signal(SIGINT, SIG_IGN)
        signal(SIGTERM, SIG_IGN)
        signal(SIGHUP, SIG_IGN)
        // A log's reader that goes away (`serve 2>&1 | tee log`, and tee is stopped) fails the
        // writes after it (EPIPE, the lines are lost), not the server.
        signal(SIGPIPE, SIG_IGN)
        let stop = DispatchSemaphore(value: 0)
        var sources = [SIGINT, SIGTERM].map { number in
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            return source
        }

        let application = try HomeportApplication(
            configuration: configuration, product: ServerCLI.product.withLock { $0 }, logger: logger)
        if let files = try tlsFiles(parsed, environment: environment) {
            let reload = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
            reload.setEventHandler {
                do {
                    try application.reloadTLS(TLSCredentials(certificateFile: files.certificate, keyFile: files.key))
                    logger.notice("reloaded the TLS certificate and key", metadata: ["certificate": files.certificate])
                } catch {
                    logger.error(
                        "kept the TLS certificate in use: the new one could not be loaded",
                        metadata: ["error": String(describing: error)])
                }
            }
            reload.resume()
            sources.append(reload)
        }
        for warning in Self.exposedSecrets(parsed, environment: environment, database: application.database) {
            logger.warning("\(warning)")
        }
        if privateEndpointsIdle {
            logger.warning(
                "--webpush-allow-private-endpoints does nothing here: this server takes no Web Push subscriptions (give --vapid-key-file, or --push-gateway-webpush-key)"
            )
        }
        let port = try application.start()
        let shown =
            configuration.listenSocket.map { "unix:\($0)" }
            ?? "\(application.configuration.http.tls == nil ? "http" : "https")://\(ListenAddress(host: configuration.listen.host, port: port))"
        ServerCLI.line(
            "homeport-server listening on \(shown) (product \(application.configuration.product), database \(configuration.database))"
        )
        if let metricsPort = application.metricsPort, let address = configuration.metricsListen {
            logger.notice(
                "serving /metrics",
                metadata: ["address": ListenAddress(host: address.host, port: metricsPort).description])
        }
        if let productPort = application.productPort, let address = configuration.productListen {
            logger.notice(
                "serving the product API",
                metadata: ["address": ListenAddress(host: address.host, port: productPort).description])
        }
        if let path = configuration.productSocket {
            logger.notice("serving the product API", metadata: ["socket": path])
        }
        if let installationPort = application.installationPort, let address = configuration.installationTLS.listen {
            logger.notice(
                "serving HTTPS with the installation's certificate",
                metadata: ["address": ListenAddress(host: address.host, port: installationPort).description])
        }
        if application.configuration.http.tls == nil && configuration.http.trustedProxies.ranges.isEmpty
            && configuration.listenSocket == nil && !Self.isLoopback(configuration.listen.host)
        {
            logger.warning(
                "serving plain HTTP on a non-loopback address without a trusted proxy: passwords and session tokens cross the network in clear; use --tls-cert and --tls-key, or a proxy that terminates TLS (--trusted-proxies)"
            )
        }
        stop.wait()
        logger.notice("shutting down: no new connections, finishing requests in flight")
        application.shutdown()
        logger.notice("stopped")
        withExtendedLifetime(sources) {}
        return .success
    }

    /// The SMTP relay of `--mail-url` and its companions, or `nil` (mail goes to the outbox).
    static func smtpSettings(_ parsed: ParsedArguments, environment: [String: String], publicURL: String?) throws
        -> SMTPSettings?
    {
        guard let url = parsed.value("mail-url", spec: spec, environment: environment) else {
            for companion in ["mail-from", "mail-password-file"]
            where parsed.value(companion, spec: spec, environment: environment) != nil {
                throw UsageError("--\(companion) needs --mail-url")
            }
            return nil
        }
        guard let parts = URLComponents(string: url), ["smtp", "smtps"].contains(parts.scheme ?? ""),
            let host = parts.host, !host.isEmpty
        else { throw UsageError("--mail-url must be smtp://[USER@]HOST:PORT or smtps://…, not '\(url)'") }
        let domain = publicURL.flatMap { URLComponents(string: $0)?.host } ?? "localhost"
        let from = parsed.value("mail-from", spec: spec, environment: environment) ?? "homeport@\(domain)"
        guard from.split(separator: "@").count == 2, !from.contains(where: { " <>\r\n".contains($0) }) else {
            throw UsageError("--mail-from must be an address such as homeport@example.net, not '\(from)'")
        }
        var password: String?
        if let file = parsed.value("mail-password-file", spec: spec, environment: environment) {
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw UsageError("cannot read --mail-password-file \(file)")
            }
            password = text.trimmingCharacters(in: .newlines)
        }
        let starttls = parsed.value("mail-starttls", spec: spec, environment: environment) ?? "try"
        guard ["try", "required"].contains(starttls) else {
            throw UsageError("--mail-starttls must be try or required, not '\(starttls)'")
        }
        return SMTPSettings(
            url: url, from: from, password: password, requireStartTLS: starttls == "required",
            caFile: environment["HOMEPORT_MAIL_CA_FILE"])
    }

    /// What to warn of, at start, about the secret files this server reads without
    /// ``PrivateFile/read(_:what:create:)``'s refusal: `--tls-key`, `--mail-password-file` and each
    /// identity provider's client secret file, when every user of the machine may open one.
    static func exposedSecrets(_ parsed: ParsedArguments, environment: [String: String], database: any Database)
        -> [String]
    {
        var files: [(path: String, what: String)] = []
        if let mail = parsed.value("mail-password-file", spec: spec, environment: environment) {
            files.append((mail, "mail password file (--mail-password-file)"))
        }
        for provider in (try? OIDCProviderStore(database).all()) ?? [] {
            if let file = provider.clientSecretFile {
                files.append((file, "client secret file of the identity provider \(provider.id)"))
            }
        }
        return [exposedTLSKey(parsed, environment: environment)].compactMap { $0 }
            + files.compactMap { PrivateFile.exposure($0.path, what: $0.what) }
    }

    /// The warning for `--tls-key` of `spec` (`serve`'s, or `gateway serve`'s) when every user of
    /// the machine may open it; `nil` otherwise.
    package static func exposedTLSKey(
        _ parsed: ParsedArguments, spec: CommandSpec = ServeCommand.spec, environment: [String: String]
    ) -> String? {
        guard let files = try? tlsFiles(parsed, spec: spec, environment: environment) else { return nil }
        return PrivateFile.exposure(files.key, what: "TLS key (--tls-key)")
    }

    /// `--tls-cert` and `--tls-key` of `spec` (`serve`'s, or `gateway serve`'s): both or neither.
    static func tlsFiles(
        _ parsed: ParsedArguments, spec: CommandSpec = ServeCommand.spec, environment: [String: String]
    ) throws
        -> (certificate: String, key: String)?
    {
        let certificate = parsed.value("tls-cert", spec: spec, environment: environment)
        let key = parsed.value("tls-key", spec: spec, environment: environment)
        switch (certificate, key) {
        case (nil, nil): return nil
        case (let certificate?, let key?): return (certificate, key)
        default: throw UsageError("--tls-cert and --tls-key go together: give both, or neither")
        }
    }

    /// The certificate and key `--tls-cert` and `--tls-key` of `spec` name, loaded; `nil` for neither.
    package static func tlsCredentials(
        _ parsed: ParsedArguments, spec: CommandSpec = ServeCommand.spec, environment: [String: String]
    )
        throws -> TLSCredentials?
    {
        guard let files = try tlsFiles(parsed, spec: spec, environment: environment) else { return nil }
        do {
            return try TLSCredentials(certificateFile: files.certificate, keyFile: files.key)
        } catch {
            throw UsageError("--tls-cert/--tls-key: \(error)")
        }
    }

    /// Whether a listen host is a loopback address or name.
    package static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Where a `HOST:PORT|/PATH` option says to listen.
    enum ListenTarget {
        case address(ListenAddress)
        case socket(String)
    }

    /// The value of `--NAME`: an absolute path is a Unix socket's, anything else a `HOST:PORT`;
    /// `nil` when it is not given.
    static func listenTarget(_ name: String, _ parsed: ParsedArguments, environment: [String: String]) throws
        -> ListenTarget?
    {
        guard let text = parsed.value(name, spec: spec, environment: environment) else { return nil }
        if text.hasPrefix("/") { return .socket(text) }
        do {
            return .address(try ListenAddress(parsing: text))
        } catch {
            throw UsageError("--\(name): \(error); or a Unix socket's absolute path")
        }
    }

    static func configuration(_ parsed: ParsedArguments, environment: [String: String]) throws -> ServerConfiguration {
        var configuration = ServerConfiguration(database: try ServerCLI.database(parsed, spec, environment))
        switch try listenTarget("listen", parsed, environment: environment) {
        case .socket(let path): configuration.listenSocket = path
        case .address(let address): configuration.listen = address
        case nil: break
        }
        let scheduling = parsed.value("scheduling", spec: spec, environment: environment)
        if let scheduling, WorkerScheduling(rawValue: scheduling) == nil {
            throw UsageError("--scheduling: '\(scheduling)' is not normal or batch")
        }
        configuration.http.workerScheduling =
            scheduling.flatMap(WorkerScheduling.init) ?? (configuration.listenSocket == nil ? .normal : .batch)
        if let product = parsed.value("product", spec: spec, environment: environment) {
            do {
                configuration.product = try ServerConfiguration.validateProduct(product)
            } catch {
                throw UsageError(String(describing: error))
            }
        }
        if let level = try ServerCLI.logLevel(parsed, spec, environment) { configuration.logLevel = level }
        try applyAccountOptions(parsed, environment: environment, to: &configuration)
        configuration.push = try PushOptions.settings(parsed, spec, environment, sender: true)
        let limit = 1...Int(Int32.max)
        // One write(2) for a batch of access-log lines rather than one a request (docs/server.md).
        configuration.http.accessLogDelay = ServeCommand.accessLogDelay
        if let workers = try ServerCLI.integer("workers", parsed, spec, environment, range: 1...256) {
            configuration.http.workerThreads = workers
        }
        if let bytes = try ServerCLI.integer("max-body-bytes", parsed, spec, environment, range: limit) {
            configuration.http.maxBodyBytes = bytes
        }
        if let bytes = try ServerCLI.integer("max-header-bytes", parsed, spec, environment, range: 4096...(16 << 20)) {
            configuration.http.maxHeaderBytes = bytes
        }
        if let seconds = try ServerCLI.integer("idle-timeout", parsed, spec, environment, range: 1...86400) {
            configuration.http.idleTimeoutSeconds = seconds
        }
        if let count = try ServerCLI.integer("max-connections", parsed, spec, environment, range: 1...1_000_000) {
            configuration.http.maxConnections = count
        }
        if let count = try ServerCLI.integer(
            "max-connections-per-address", parsed, spec, environment, range: 0...1_000_000)
        {
            configuration.http.maxConnectionsPerAddress = count
        }
        if let count = try ServerCLI.integer("max-streams-per-session", parsed, spec, environment, range: 0...100_000) {
            configuration.push.streamLimits.perSession = count
        }
        if let count = try ServerCLI.integer("max-streams-per-account", parsed, spec, environment, range: 0...100_000) {
            configuration.push.streamLimits.perAccount = count
        }
        if let count = try ServerCLI.integer("max-streams-per-address", parsed, spec, environment, range: 0...1_000_000)
        {
            configuration.push.streamLimits.perClient = count
        }
        if let seconds = try ServerCLI.integer("header-timeout", parsed, spec, environment, range: 1...3600) {
            configuration.http.headerTimeoutSeconds = seconds
        }
        if let seconds = try ServerCLI.integer("body-timeout", parsed, spec, environment, range: 1...3600) {
            configuration.http.bodyTimeoutSeconds = seconds
        }
        if let rate = try ServerCLI.integer("min-body-rate", parsed, spec, environment, range: 0...(1 << 30)) {
            configuration.http.minBodyBytesPerSecond = rate
        }
        if let bytes = try ServerCLI.integer("max-buffered-body-bytes", parsed, spec, environment, range: limit) {
            configuration.http.maxBufferedBodyBytes = bytes
        }
        configuration.smtp = try smtpSettings(
            parsed, environment: environment, publicURL: configuration.accounts.publicURL)
        if let socket = configuration.listenSocket,
            ["tls-cert", "tls-key"].contains(where: { parsed.value($0, spec: spec, environment: environment) != nil })
        {
            throw UsageError("--listen \(socket) serves plain HTTP to the proxy on this host: TLS is the proxy's")
        }
        configuration.http.tls = try tlsCredentials(parsed, environment: environment)
        configuration.installationTLS.onListen = try parsed.flag(
            "tls-installation", spec: spec, environment: environment)
        if configuration.installationTLS.onListen && configuration.http.tls != nil {
            throw UsageError(
                "--tls-installation serves the installation's own certificate on --listen: leave out --tls-cert and --tls-key, or serve it on --installation-listen"
            )
        }
        if configuration.installationTLS.onListen, let socket = configuration.listenSocket {
            throw UsageError(
                "--listen \(socket) serves plain HTTP to the proxy on this host: serve the installation's certificate on --installation-listen"
            )
        }
        if let text = parsed.value("installation-listen", spec: spec, environment: environment) {
            do {
                configuration.installationTLS.listen = try ListenAddress(parsing: text)
            } catch {
                throw UsageError("--installation-listen: \(error)")
            }
        }
        if let priorities = parsed.value("tls-priority", spec: spec, environment: environment) {
            guard configuration.http.tls != nil else {
                throw UsageError("--tls-priority needs --tls-cert and --tls-key")
            }
            guard !priorities.isEmpty, priorities.utf8.count <= 1024,
                priorities.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 })
            else { throw UsageError("--tls-priority must be a GnuTLS priority string, such as NORMAL:-VERS-TLS1.0") }
            configuration.http.tls?.priorities = priorities
        }
        switch try listenTarget("product-listen", parsed, environment: environment) {
        case .socket(let path): configuration.productSocket = path
        case .address(let address): configuration.productListen = address
        case nil: break
        }
        if let text = parsed.value("metrics-listen", spec: spec, environment: environment) {
            do {
                configuration.metricsListen = try ListenAddress(parsing: text)
            } catch {
                throw UsageError("--metrics-listen: \(error)")
            }
        }
        let headerName = parsed.value("forwarded-header", spec: spec, environment: environment) ?? "x-forwarded-for"
        guard let header = TrustedProxies.Header(rawValue: headerName.lowercased()) else {
            throw UsageError("--forwarded-header: '\(headerName)' is not x-forwarded-for or forwarded")
        }
        configuration.http.trustedProxies.header = header
        if let list = parsed.value("trusted-proxies", spec: spec, environment: environment) {
            do {
                configuration.http.trustedProxies = try TrustedProxies(parsing: list, header: header)
            } catch {
                throw UsageError("--trusted-proxies: \(error)")
            }
        }
        if let seconds = try ServerCLI.integer("session-cache-seconds", parsed, spec, environment, range: 0...60) {
            configuration.sessionCacheSeconds = seconds
        }
        if let threads = try ServerCLI.integer("password-threads", parsed, spec, environment, range: 1...256) {
            configuration.http.poolThreads = threads
        }
        if let count = try ServerCLI.integer("password-queue", parsed, spec, environment, range: 0...100_000) {
            configuration.http.poolQueueLimit = count
        }
        guard configuration.http.maxBufferedBodyBytes >= configuration.http.maxBodyBytes else {
            throw UsageError(
                "--max-buffered-body-bytes (\(configuration.http.maxBufferedBodyBytes)) must be at least --max-body-bytes (\(configuration.http.maxBodyBytes))"
            )
        }
        return configuration
    }

    static func applyAccountOptions(
        _ parsed: ParsedArguments, environment: [String: String], to configuration: inout ServerConfiguration
    ) throws {
        if let text = parsed.value("signup", spec: spec, environment: environment) {
            guard let policy = SignupPolicy(rawValue: text) else {
                throw UsageError("--signup must be open, approval or closed, not '\(text)'")
            }
            configuration.accounts.signup = policy
        }
        if let text = parsed.value("email-verification", spec: spec, environment: environment) {
            guard let policy = EmailVerificationPolicy(rawValue: text) else {
                throw UsageError("--email-verification must be none or code, not '\(text)'")
            }
            configuration.accounts.emailVerification = policy
        }
        if let text = parsed.value("invitations", spec: spec, environment: environment) {
            guard let policy = InvitationPolicy(rawValue: text) else {
                throw UsageError("--invitations must be admins, members or off, not '\(text)'")
            }
            configuration.accounts.invitations = policy
        }
        configuration.accounts.providerCAFile = environment["HOMEPORT_OIDC_CA_FILE"]
        if let text = parsed.value("session-lifetime", spec: spec, environment: environment) {
            guard let seconds = DurationText.seconds(text), (60...(100 * 366 * 86400)).contains(seconds) else {
                throw UsageError(
                    "--session-lifetime must be a duration from a minute to 100 years, such as 365d or 12h, not '\(text)'"
                )
            }
            configuration.accounts.sessionLifetime = seconds
        }
        if let iterations = try ServerCLI.integer(
            "password-iterations", parsed, spec, environment, range: 1000...100_000_000)
        {
            configuration.accounts.passwordIterations = iterations
        }
        if let text = parsed.value("rate-limits", spec: spec, environment: environment) {
            let budgets = ServerCLI.product.withLock { $0.budgets.map(\.name) }
            for item in text.split(separator: ",") {
                let parts = item.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, let limit = RateLimit(parsing: parts[1]),
                    configuration.accounts.rateLimits.set(String(parts[0]), to: limit)
                        || budgets.contains(String(parts[0]))
                else {
                    throw UsageError(
                        "--rate-limits takes NAME=N/SECONDS items (N up to 1000000, SECONDS up to a year); '\(item)' is not one. Names: "
                            + (RateLimitPolicy.names + budgets).joined(separator: ", "))
                }
                if budgets.contains(String(parts[0])) {
                    configuration.accounts.rateLimits.productLimits[String(parts[0])] = limit
                }
            }
            // A window shorter than a code's life would let more tries through than the limit says.
            let tries = configuration.accounts.rateLimits.verificationAttemptPerSession
            guard tries.windowSeconds >= AccountSettings.verificationCodeLifetime else {
                throw UsageError(
                    "verification-attempt-per-session counts the tries of one verification: its window must be at least "
                        + "\(AccountSettings.verificationCodeLifetime) seconds (a code's life), not \(tries.windowSeconds)"
                )
            }
        }
        if let url = parsed.value("public-url", spec: spec, environment: environment) {
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw UsageError("--public-url must start with http:// or https://, not '\(url)'")
            }
            configuration.accounts.publicURL = url
        } else if let socket = configuration.listenSocket {
            throw UsageError(
                "--listen \(socket) needs --public-url: the address people reach the server at through its proxy")
        }
        configuration.outboxDirectory =
            parsed.value("outbox", spec: spec, environment: environment)
            ?? ServerDefaults.outboxDirectory(environment: environment)
        configuration.secretsKeyFile = parsed.value("secrets-key-file", spec: spec, environment: environment)
    }

}
