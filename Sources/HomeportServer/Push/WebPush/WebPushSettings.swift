import Foundation
import HomeportCrypto
import HomeportWire

/// How this process sends Web Pushes (RFC 8030) to browsers and UnifiedPush distributors: the
/// VAPID key that signs each request (RFC 8292) and the contact the push services see.
package struct WebPushSettings: Sendable {
    /// The VAPID private key (P-256) as PEM, read from its file; never logged.
    package var keyPEM: String
    /// Who runs this server, for the push services: `mailto:…` or `https://…`.
    package var subject: String
    /// Longest wait for one push service's answer, in seconds (a push service that takes longer
    /// is tried again later).
    package var timeoutSeconds: Int
    /// Whether endpoints on this machine or a private network (and plain `http://` there) are
    /// taken: a UnifiedPush distributor on the household's network, tests. Off, the server
    /// posts only to public `https://` push services.
    package var allowPrivateEndpoints = false
    /// PEM certificates to trust besides the system's for push services (a distributor on the
    /// household's network with a CA of its own; a test push service).
    package var extraCA: String?

    /// Creates settings.
    package init(keyPEM: String, subject: String, timeoutSeconds: Int = 10) {
        self.keyPEM = keyPEM
        self.subject = subject
        self.timeoutSeconds = timeoutSeconds
    }

    /// The public key devices subscribe with (`applicationServerKey`), base64url.
    package func publicKey() throws -> String {
        IdentityProof.base64URL(try ES256Key(pem: keyPEM).publicKey)
    }

    /// The key in the file at `path`, made there first (a new P-256 key, mode 0600) when the file
    /// does not exist. Throws ``ConfigurationError`` for a file others may read or that holds no
    /// P-256 key.
    package static func key(fromFile path: String) throws -> String {
        let data = try PrivateFile.read(
            path, what: "VAPID key file", create: { try P256Key.generate().privateKeyPEM })
        let pem = String(decoding: data, as: UTF8.self)
        do {
            _ = try ES256Key(pem: pem)
        } catch {
            throw ConfigurationError("the VAPID key file \(path) does not hold a P-256 private key: \(error)")
        }
        return pem
    }

    /// Whether `subject` may be the VAPID contact: `mailto:` with an address, or an `https://` URL.
    package static func isAllowedSubject(_ subject: String) -> Bool {
        guard (8...256).contains(subject.utf8.count), subject.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else { return false }
        let lower = subject.lowercased()
        if lower.hasPrefix("mailto:") { return subject.dropFirst(7).contains("@") }
        return lower.hasPrefix("https://") && URLComponents(string: subject)?.host?.isEmpty == false
    }
}
