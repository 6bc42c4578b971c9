import HomeportHTTP
import HomeportLifecycle
import HomeportLogging
import Synchronization

/// Keeps the installation certificate fresh on the listeners that serve it: checked every
/// ``interval``, made anew when due (``InstallationCertificate/isDue(now:publicKey:names:)``) and
/// handed to each listener without dropping a connection (open ones finish on the old one).
final class InstallationCertificateRenewal: Sendable {
    /// How often the certificate is checked.
    static let interval: Duration = .seconds(3_600)

    private let identity: IdentityStore
    private let hosts: [String]
    private let clock: any WallClock
    private let logger: Logger
    private let servers = Mutex<[HTTPServer]>([])
    private let current: Mutex<InstallationCertificate>

    /// Makes the first certificate, for the listeners reached through `hosts`. Throws when the
    /// installation has no key (``InstallationCertificateError/noKey``).
    init(identity: IdentityStore, hosts: [String], clock: any WallClock, logger: Logger) throws {
        self.identity = identity
        self.hosts = hosts
        self.clock = clock
        self.logger = logger
        current = Mutex(
            try InstallationCertificate.make(
                identity: try identity.current(), names: CertificateNames.gather(hosts: hosts), now: clock.unixSeconds))
    }

    /// The certificate served now.
    var certificate: InstallationCertificate { current.withLock { $0 } }

    /// Adds a listener to renew the certificate of.
    func serve(_ server: HTTPServer) {
        servers.withLock { $0.append(server) }
    }

    /// Makes a new certificate and hands it to every listener when the one served is due; true
    /// when it did. Throws, keeping the old one, when the key cannot be read or a listener refuses
    /// the new one.
    @discardableResult
    func renewIfDue() throws -> Bool {
        let now = clock.unixSeconds
        let names = CertificateNames.gather(hosts: hosts)
        let installation = try identity.current()
        guard certificate.isDue(now: now, publicKey: installation.publicKey, names: names) else { return false }
        let renewed = try InstallationCertificate.make(identity: installation, names: names, now: now)
        for server in servers.withLock({ $0 }) { try server.reloadTLS(renewed.credentials) }
        current.withLock { $0 = renewed }
        logger.notice(
            "renewed the installation certificate",
            metadata: ["names": (names.dns + names.ips).joined(separator: ","), "until": String(renewed.notAfter)])
        return true
    }

    /// The timer that checks it.
    func service() -> RepeatingTask {
        let logger = logger
        return RepeatingTask(
            "homeport.installation-certificate", after: Self.interval, every: Self.interval,
            failed: { error in
                logger.warning(
                    "kept the installation certificate in use: a new one could not be made",
                    metadata: ["error": String(describing: error)])
            }
        ) { [self] in try renewIfDue() }
    }
}
