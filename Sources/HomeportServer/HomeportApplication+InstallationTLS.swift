import Foundation
import HomeportLogging

extension HomeportApplication {
    /// The installation certificate's keeper when `configuration` serves one (its main listener
    /// then serves it: ``ServerConfiguration/http`` gains it); `nil` otherwise. Throws a
    /// ``ConfigurationError`` when it cannot be served: no installation key, a Unix socket, or a
    /// certificate of the operator's on the same listener.
    static func installationCertificate(
        _ configuration: inout ServerConfiguration, identity: IdentityStore, clock: any WallClock, logger: Logger
    ) throws -> InstallationCertificateRenewal? {
        let settings = configuration.installationTLS
        guard settings.onListen || settings.listen != nil else { return nil }
        if settings.onListen {
            if let socket = configuration.listenSocket {
                throw ConfigurationError(
                    "the Unix socket \(socket) serves plain HTTP to the proxy on this host: serve the installation's certificate on another listener"
                )
            }
            if configuration.http.tls != nil {
                throw ConfigurationError(
                    "the main listener serves a certificate of its own: serve the installation's on another listener")
            }
        }
        if let listen = settings.listen, configuration.listenSocket == nil, listen == configuration.listen,
            listen.port != 0
        {
            throw ConfigurationError("the installation's HTTPS listener needs an address of its own, not \(listen)")
        }
        let hosts =
            [configuration.listen.host] + [settings.listen?.host].compactMap { $0 }
            + [configuration.accounts.publicURL.flatMap { URL(string: $0)?.host }].compactMap { $0 }
        let renewal: InstallationCertificateRenewal
        do {
            renewal = try InstallationCertificateRenewal(
                identity: identity, hosts: hosts, clock: clock, logger: logger.withLabel("homeport.identity"))
        } catch let error as InstallationCertificateError {
            throw ConfigurationError(error.description)
        }
        if settings.onListen { configuration.http.tls = renewal.certificate.credentials }
        return renewal
    }
}
