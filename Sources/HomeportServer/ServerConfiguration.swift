import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire

/// Everything `homeport-server serve` needs, resolved from flags, the environment and defaults.
package struct ServerConfiguration: Sendable {
    /// Where to listen.
    package var listen: ListenAddress
    /// A Unix-domain socket to serve the app's listener on instead of ``listen`` (mode 0660), for
    /// a reverse proxy on this host: its peers are trusted as proxies, so the
    /// ``TrustedProxies/header`` they send names the client. ``AccountSettings/publicURL`` is
    /// required with it (the socket is no address anyone uses): the application refuses to start
    /// without one.
    package var listenSocket: String?
    /// Where the data lives.
    package var database: DatabaseURL
    /// The product name announced by the identity route.
    package var product: String
    /// HTTP limits (host and port come from ``listen``).
    package var http: HTTPServerConfiguration
    /// Database pool and lock settings.
    package var databaseOptions: DatabaseOptions
    /// The lowest log level written.
    package var logLevel: Logger.Level
    /// Accounts, sessions and rate limits.
    package var accounts: AccountSettings
    /// Where the default mailer writes outgoing mail (`.eml` files).
    package var outboxDirectory: String
    /// An SMTP relay to send mail through instead of the outbox directory.
    package var smtp: SMTPSettings?
    /// Where `GET /metrics` (Prometheus's text format) is served, apart from the API; off when `nil`.
    package var metricsListen: ListenAddress?
    /// Where the product API (product keys, `/product/v1/…`) is served, apart from the app's
    /// listener; off when `nil`. Reach it only from the product's own host or network.
    package var productListen: ListenAddress?
    /// A Unix-domain socket to serve the product API on instead of ``productListen`` (mode 0660:
    /// the product's user reaches it through the group).
    package var productSocket: String?
    /// HTTPS with a certificate made from the installation key, on the main listener or another.
    package var installationTLS = InstallationTLSSettings()
    /// Notifications: the payload's key, the catalogue, APNs.
    package var push: PushSettings
    /// How long a signed-in session read from the database serves later requests from memory;
    /// 0 reads it every time. On one process, and on PostgreSQL (where every replica hears
    /// every session end at once), an ended session is refused at once whatever this is; with
    /// several processes on one SQLite file, this is how long another process may still serve it.
    package var sessionCacheSeconds = 1
    /// The file holding the key that seals second factors' secrets (``SecretsKey``); `nil` uses
    /// the file beside a SQLite database, and offers no second factor on PostgreSQL.
    package var secretsKeyFile: String?
    /// How often this replica writes its heartbeat, and how long it trusts its cached identity
    /// after the last one written (shortened by tests).
    var heartbeat = HeartbeatTiming()

    /// Creates a configuration.
    package init(
        listen: ListenAddress = ServerDefaults.listen,
        database: DatabaseURL,
        product: String = HomeportProtocol.defaultProduct,
        http: HTTPServerConfiguration = HTTPServerConfiguration(),
        databaseOptions: DatabaseOptions = DatabaseOptions(),
        logLevel: Logger.Level = .info,
        accounts: AccountSettings = AccountSettings(),
        outboxDirectory: String = ServerDefaults.outboxDirectory(environment: ProcessInfo.processInfo.environment),
        push: PushSettings = PushSettings()
    ) {
        self.listen = listen
        self.database = database
        self.product = product
        self.http = http
        self.databaseOptions = databaseOptions
        self.logLevel = logLevel
        self.accounts = accounts
        self.outboxDirectory = outboxDirectory
        self.push = push
    }

    /// The HTTP configuration with the listen address applied.
    package var effectiveHTTP: HTTPServerConfiguration {
        var http = http
        http.host = listen.host
        http.port = listen.port
        if let listenSocket {
            http.unixSocketPath = listenSocket
            http.trustedProxies.trustsLocalSocket = true
        }
        return http
    }

    /// Checks a product name: 1–64 characters of letters, digits, `.`, `_` and `-`.
    /// The configuration with `product`'s additions: its name announced where the operator named
    /// none, its notification codes in the catalogue (before the operator's own extra codes,
    /// which may retitle them), and its app-data key where the operator chose none.
    func serving(_ product: Product) -> ServerConfiguration {
        guard !product.isHomeport else { return self }
        var configuration = self
        if configuration.product == HomeportProtocol.defaultProduct { configuration.product = product.name }
        configuration.push = push.serving(product)
        return configuration
    }

    /// `name` when it can be announced as the product (1–64 letters, digits, `.`, `_`, `-`);
    /// otherwise throws a sentence saying so.
    package static func validateProduct(_ name: String) throws -> String {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
        guard (1...64).contains(name.count), name.allSatisfy(allowed.contains) else {
            throw ConfigurationError(
                "'\(name.prefix(80))' is not a product name; use 1–64 letters, digits, '.', '_' or '-'")
        }
        return name
    }
}

/// Defaults of the server, in one place so `--help` and the docs say the same.
package enum ServerDefaults {
    /// The server's software version.
    package static let version = "0.1.0"

    /// `127.0.0.1:8080`
    package static let listen = ListenAddress(host: "127.0.0.1", port: 8080)

    /// The data directory: `$HOMEPORT_DATA_DIR`, else `$XDG_DATA_HOME/homeport`,
    /// else `~/.local/share/homeport`.
    package static func dataDirectory(environment: [String: String]) -> String {
        if let explicit = environment["HOMEPORT_DATA_DIR"], !explicit.isEmpty { return explicit }
        if let xdg = environment["XDG_DATA_HOME"], xdg.hasPrefix("/") { return xdg + "/homeport" }
        let home = environment["HOME"].flatMap { $0.isEmpty ? nil : $0 } ?? NSHomeDirectory()
        return home + "/.local/share/homeport"
    }

    /// `<data directory>/outbox`
    package static func outboxDirectory(environment: [String: String]) -> String {
        dataDirectory(environment: environment) + "/outbox"
    }

    /// `sqlite:<data directory>/homeport.sqlite`
    package static func database(environment: [String: String]) -> DatabaseURL {
        .sqlite(path: dataDirectory(environment: environment) + "/homeport.sqlite")
    }
}

/// A configuration value that cannot be used; the message says what to do instead.
package struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    /// A sentence for the operator.
    package let description: String

    /// Creates an error with a message.
    package init(_ description: String) {
        self.description = description
    }
}
