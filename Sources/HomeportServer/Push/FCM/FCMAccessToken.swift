import Foundation
import HomeportCrypto
import HomeportWire
import Synchronization

/// The OAuth access token FCM takes (RFC 7523: a service account's signed assertion exchanged at
/// its `token_uri`), made when first needed, used until five minutes before it expires, and made
/// again once when FCM refuses it. Kept in this process only; never logged.
final class FCMAccessToken: Sendable {
    private let settings: FCMSettings
    private let key: RSAPrivateKey
    private let clock: any WallClock
    private let session: CurlSession
    private let held = Mutex<(token: String, expires: Int64)?>(nil)
    /// The scope FCM's send call needs.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    init(settings: FCMSettings, clock: any WallClock) throws {
        self.settings = settings
        key = try RSAPrivateKey(pem: settings.privateKeyPEM)
        self.clock = clock
        session = CurlSession(timeoutSeconds: settings.timeoutSeconds, byteLimit: 64 << 10)
    }

    /// Why there is no access token.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The token in force, made first when there is none or it is about to expire.
    func current() throws -> String {
        let now = clock.unixSeconds
        if let held = held.withLock({ $0 }), held.expires - 300 > now { return held.token }
        return try exchange(now: now)
    }

    /// A new token, unless another caller already replaced `rejected`.
    func refresh(after rejected: String) throws -> String {
        if let held = held.withLock({ $0 }), held.token != rejected { return held.token }
        return try exchange(now: clock.unixSeconds)
    }

    private func exchange(now: Int64) throws -> String {
        var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
        if let kid = settings.privateKeyID { header["kid"] = kid }
        let claims: [String: Any] = [
            "iss": settings.clientEmail, "scope": Self.scope, "aud": settings.tokenURI, "iat": now, "exp": now + 3600,
        ]
        let signingInput = try [header, claims].map { object in
            IdentityProof.base64URL(Array(try JSONSerialization.data(withJSONObject: object, options: .sortedKeys)))
        }.joined(separator: ".")
        let assertion = signingInput + "." + IdentityProof.base64URL(try key.sign(Array(signingInput.utf8)))
        let form = "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion
        let answer: CurlSession.Answer
        switch session.perform(
            settings.tokenURI, headers: ["Content-Type: application/x-www-form-urlencoded"], body: Data(form.utf8))
        {
        case .failure(let failure): throw Failure(description: "the token endpoint: \(failure.description)")
        case .success(let success): answer = success
        }
        guard answer.status == 200,
            let object = try? JSONSerialization.jsonObject(with: answer.body) as? [String: Any],
            let token = object["access_token"] as? String, !token.isEmpty,
            token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else { throw Failure(description: "the token endpoint answered \(answer.status) without an access token") }
        let lifetime = (object["expires_in"] as? Int).map { Int64(min(max($0, 60), 86400)) } ?? 3600
        held.withLock { $0 = (token, now + lifetime) }
        return token
    }
}
