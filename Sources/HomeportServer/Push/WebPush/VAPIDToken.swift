import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportWire
import Synchronization

/// The `Authorization` of a Web Push request (RFC 8292): `vapid t=JWT, k=KEY`, where the JWT,
/// signed with the server's VAPID key (ES256), names the push service's origin (`aud`), the
/// server's contact (`sub`) and an expiry 12 hours on. One per origin, made again an hour before
/// it expires.
final class VAPIDToken: Sendable {
    private let key: ES256Key
    private let publicKey: String
    private let subject: String
    private let clock: any WallClock
    private let made = Mutex<[String: (header: String, expires: Int64)]>([:])
    /// How long a token is good for, in seconds (at most a day, says RFC 8292).
    static let lifetime: Int64 = 12 * 3600

    init(settings: WebPushSettings, clock: any WallClock) throws {
        key = try ES256Key(pem: settings.keyPEM)
        publicKey = IdentityProof.base64URL(key.publicKey)
        subject = settings.subject
        self.clock = clock
    }

    /// The `Authorization` header's value for a push to the push service whose origin is
    /// `audience`.
    func authorization(audience: String) throws -> String {
        let now = clock.unixSeconds
        if let cached = made.withLock({ $0[audience] }), cached.expires - 3600 > now { return cached.header }
        let expires = now + Self.lifetime
        let header = IdentityProof.base64URL(Array(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        let claims = try HTTPResponse.encode(untyped: ["aud": audience, "exp": expires, "sub": subject])
        let signingInput = header + "." + IdentityProof.base64URL(Array(claims))
        let signature = try key.sign(Array(signingInput.utf8))
        let value = "vapid t=\(signingInput).\(IdentityProof.base64URL(signature)), k=\(publicKey)"
        made.withLock { cache in
            if cache.count >= 1000 { cache.removeAll() }
            cache[audience] = (value, expires)
        }
        return value
    }
}
