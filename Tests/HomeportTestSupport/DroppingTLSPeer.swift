import Foundation

/// A host that completes a TLS handshake (ALPN `h2`, a certificate for 127.0.0.1) and ends the
/// connection after the client's first bytes, as an APNs host that goes away while a batch goes
/// out does: the first connection and every other one after it closed, the others reset
/// (`interop/apns/dropper.py`).
public final class DroppingTLSPeer: @unchecked Sendable {
    private let running: PythonStandIn

    /// Starts it and waits until it listens.
    public init() throws {
        running = try PythonStandIn(peer: "apns", script: "dropper.py", what: "dropping TLS peer")
    }

    deinit {
        running.stop()
    }

    /// Its base URL.
    public var url: String { "https://127.0.0.1:\(running.port)" }
    /// The CA that signed its certificate, to trust.
    public var caFile: String { running.directory.file("ca.pem") }
    /// An APNs auth key (`.p8`) for a sender to sign its provider tokens with (the host reads none).
    public var keyFile: String { running.directory.file("auth-key.p8") }
}
