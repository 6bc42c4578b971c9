import HomeportHTTP

/// Where the server serves HTTPS with a self-signed certificate made from the installation key
/// (renewed by itself): clients that pinned the key accept it on any address, with no
/// certificate authority; browsers and other clients see an untrusted certificate.
package struct InstallationTLSSettings: Sendable, Equatable {
    /// Whether the main listener (`--listen`) serves it (`--tls-installation`).
    package var onListen: Bool
    /// Another listener serving the app over HTTPS with it (`--installation-listen`), beside a
    /// main listener that serves plain HTTP behind a proxy or a CA's certificate.
    package var listen: ListenAddress?

    /// Creates settings.
    package init(onListen: Bool = false, listen: ListenAddress? = nil) {
        self.onListen = onListen
        self.listen = listen
    }
}
