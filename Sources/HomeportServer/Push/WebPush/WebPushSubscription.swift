import Foundation
import HomeportCrypto
import HomeportCurl
import HomeportHTTP
import HomeportWire

/// The rules for a Web Push subscription a device registers: its endpoint and its keys.
package enum WebPushSubscription {
    /// The prefix of the name the server gives a subscription (`webpush:` and 64 hex digits).
    static let tokenPrefix = "webpush:"

    /// The server's name for the subscription at `endpoint`: `webpush:` and the SHA-256 of the
    /// endpoint, in hex (an endpoint is a secret of its device: it never goes in a path or a log).
    package static func token(endpoint: String) -> String {
        DeviceName.make(tokenPrefix, endpoint)
    }

    /// Whether `text` is such a name.
    package static func isToken(_ text: String) -> Bool {
        DeviceName.isName(text, prefix: tokenPrefix)
    }

    /// What is wrong with `endpoint`, or `nil`: an `https://` URL with a host, without user
    /// information or a fragment, at most 1024 characters. A host that names this machine or a
    /// private network (`localhost`, a loopback, private, link-local, shared or unique-local
    /// address) is refused unless `allowPrivate` (`--webpush-allow-private-endpoints`: a
    /// distributor on the household's network, tests), and then plain `http://` is taken too:
    /// otherwise any account could make the server post to its neighbours.
    static func endpointProblem(_ endpoint: String, allowPrivate: Bool) -> String? {
        guard (1...1024).contains(endpoint.utf8.count), endpoint.utf8.allSatisfy({ (0x21...0x7E).contains($0) }),
            let components = URLComponents(string: endpoint), let host = components.host, !host.isEmpty,
            components.user == nil, components.password == nil, components.fragment == nil
        else { return "The endpoint is the push service's https:// URL (at most 1024 characters)." }
        let scheme = components.scheme?.lowercased()
        let isPrivate = NetworkAddress.isPrivate(host: host)
        guard scheme == "https" || (scheme == "http" && allowPrivate && isPrivate) else {
            return "The endpoint must be https:// (plain http:// only on a private network this server allows)."
        }
        if !allowPrivate, isPrivate {
            return "The endpoint names this machine or a private network; this server does not post there."
        }
        if NetworkAddress.isLinkLocal(host: host) {
            return "The endpoint is a link-local address; no push service or distributor is there."
        }
        // libcurl removes dot segments before it sends: `/x/../wpush/T` is `/wpush/T` to the push
        // service, and would be a second name for one subscription. No push service's has one.
        let dotSegment = components.percentEncodedPath.split(separator: "/", omittingEmptySubsequences: false)
            .contains { segment in
                let dots = segment.lowercased().replacingOccurrences(of: "%2e", with: ".")
                return dots == "." || dots == ".."
            }
        if dotSegment { return "The endpoint's path has a dot segment (. or ..), which no push service's has." }
        // A `%` that is not a percent-encoding would be sent as another URL (`%25`).
        if !PercentEncoding.isWellFormed(endpoint) {
            return "The endpoint has a % that is not a percent-encoding (%XX)."
        }
        return nil
    }

    /// `scheme://host[:port]` of an endpoint (user information is refused at registration),
    /// read without a URL parser: what comes before the first `/`, `?` or `#` after `://` (all of
    /// it, without `://`), in lowercase, without a default port.
    static func origin(of endpoint: String) -> String {
        CurlMulti.origin(of: endpoint)
    }

    /// `endpoint` as one subscription is spelled once (RFC 3986's normal form, as a push service
    /// reads it): the scheme and host in lowercase, without the host's final dot, the default
    /// port left out, a percent-encoded unreserved character written as itself and the hex
    /// digits of the others in uppercase (so `HTTPS://Push.Example.:443/%77push/%2fx` is
    /// `https://push.example/wpush/%2Fx`).
    static func normalized(_ endpoint: String) -> String {
        guard var components = URLComponents(string: endpoint), let scheme = components.scheme?.lowercased() else {
            return endpoint
        }
        components.scheme = scheme
        if var host = components.percentEncodedHost?.lowercased() {
            if host.count > 1, host.hasSuffix(".") { host.removeLast() }
            components.percentEncodedHost = host
        }
        components.percentEncodedPath = PercentEncoding.normalized(components.percentEncodedPath)
        components.percentEncodedQuery = components.percentEncodedQuery.map(PercentEncoding.normalized)
        if (scheme == "https" && components.port == 443) || (scheme == "http" && components.port == 80) {
            components.port = nil
        }
        return components.string ?? endpoint
    }

    /// The subscription's public key: base64url of a 65-byte uncompressed P-256 point on the curve.
    static func publicKey(_ text: String) -> [UInt8]? {
        guard let bytes = IdentityProof.readBase64URL(Self.unpadded(text)), bytes.count == 65, bytes.first == 0x04,
            P256Key.isValidPublicKey(bytes)
        else { return nil }
        return bytes
    }

    /// The subscription's public key's 65 bytes (uncompressed form), not checked on the curve:
    /// for a key checked at registration, which the encryption checks again.
    static func publicKeyBytes(_ text: String) -> [UInt8]? {
        guard let bytes = IdentityProof.readBase64URL(Self.unpadded(text)), bytes.count == 65, bytes.first == 0x04
        else { return nil }
        return bytes
    }

    /// The subscription's authentication secret: base64url of 16 bytes.
    static func authSecret(_ text: String) -> [UInt8]? {
        guard let bytes = IdentityProof.readBase64URL(Self.unpadded(text)), bytes.count == 16 else { return nil }
        return bytes
    }

    /// A Web Push subscription as the server keeps it (named by its endpoint's hash, its keys
    /// in canonical base64url), or the 400 that names the field that is wrong.
    package static func registration(
        endpoint given: String?, _ p256dh: String?, _ auth: String?, allowPrivate: Bool
    ) throws -> PushDeviceRegistration {
        guard let given else { throw HTTPError.invalidField("endpoint", "A Web Push subscription has an endpoint.") }
        if let problem = WebPushSubscription.endpointProblem(given, allowPrivate: allowPrivate) {
            throw HTTPError.invalidField("endpoint", problem)
        }
        let endpoint = WebPushSubscription.normalized(given)
        guard let key = p256dh.flatMap(WebPushSubscription.publicKey) else {
            throw HTTPError.invalidField(
                "keys.p256dh", "keys.p256dh is the subscription's P-256 public key: 65 bytes, base64url.")
        }
        guard let secret = auth.flatMap(WebPushSubscription.authSecret) else {
            throw HTTPError.invalidField(
                "keys.auth", "keys.auth is the subscription's authentication secret: 16 bytes, base64url.")
        }
        var registration = PushDeviceRegistration(
            webPushEndpoint: endpoint,
            keys: WebPushKeys(p256dh: IdentityProof.base64URL(key), auth: IdentityProof.base64URL(secret)))
        registration.token = WebPushSubscription.token(endpoint: endpoint)
        return registration
    }

    /// `text` without the `=` padding some encoders add.
    private static func unpadded(_ text: String) -> String {
        // On the bytes: a push's keys pass here each time it is sent.
        var bytes = text.utf8.prefix(200)
        while bytes.last == UInt8(ascii: "=") { bytes.removeLast() }
        return String(decoding: bytes, as: UTF8.self)
    }
}
