import Foundation
import HomeportCrypto
import HomeportCurl
import HomeportHTTP
import HomeportStorage
import HomeportWire
import Synchronization

/// The OAuth access token FCM takes (RFC 7523: a service account's signed assertion exchanged at
/// its `token_uri`), shared by every replica through the `fcm_access_tokens` row of its project,
/// as the APNs provider token is: made by the first replica that needs one, used until five
/// minutes before it expires, made again once when FCM refuses it.
///
/// The token is a bearer credential for its hour, so the row keeps it sealed (AES-256-GCM) with a
/// key derived from the service account's private key, which every sending replica holds and the
/// database never does. Never logged.
final class FCMAccessToken: Sendable {
    private let settings: FCMSettings
    private let key: RSAPrivateKey
    private let database: any Database
    private let clock: any WallClock
    private let session: CurlSession
    private let sealing: [UInt8]
    private let held = Mutex<(token: String, expires: Int64)?>(nil)
    /// The scope FCM's send call needs.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// A token is not used in its last five minutes.
    static let margin: Int64 = 300

    init(settings: FCMSettings, database: any Database, clock: any WallClock) throws {
        self.settings = settings
        key = try RSAPrivateKey(pem: settings.privateKeyPEM)
        sealing = try key.derivedSecret("homeport fcm access token")
        self.database = database
        self.clock = clock
        session = CurlSession(timeoutSeconds: settings.timeoutSeconds, byteLimit: 64 << 10)
    }

    /// Why there is no access token.
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The token in force: this process's, or the one another replica stored, or a new one.
    func current() throws -> String {
        let now = clock.unixSeconds
        if let held = held.withLock({ $0 }), held.expires - Self.margin > now { return held.token }
        if let stored = try read(), stored.expires - Self.margin > now {
            held.withLock { $0 = stored }
            return stored.token
        }
        return try exchange(now: now)
    }

    /// A new token, unless another replica already replaced `rejected`.
    func refresh(after rejected: String) throws -> String {
        let now = clock.unixSeconds
        if let stored = try read(), stored.token != rejected, stored.expires - Self.margin > now {
            held.withLock { $0 = stored }
            return stored.token
        }
        return try exchange(now: now)
    }

    private func exchange(now: Int64) throws -> String {
        var header: [String: Any] = ["alg": "RS256", "typ": "JWT"]
        if let kid = settings.privateKeyID { header["kid"] = kid }
        let claims: [String: Any] = [
            "iss": settings.clientEmail, "scope": Self.scope, "aud": settings.tokenURI, "iat": now, "exp": now + 3600,
        ]
        let signingInput = try [header, claims].map { object in
            IdentityProof.base64URL(Array(try HTTPResponse.encode(untyped: object)))
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
        let made = (token: token, expires: now + lifetime)
        try store(made)
        held.withLock { $0 = made }
        return token
    }

    /// The project's stored token, when this service account's key opens it.
    private func read() throws -> (token: String, expires: Int64)? {
        guard
            let row = try database.execute(
                "SELECT client_email, token, expires_at FROM fcm_access_tokens WHERE project_id = $1",
                [.text(settings.projectID)]
            ).first, row.string("client_email") == settings.clientEmail, let sealed = row.string("token"),
            let expires = row.int("expires_at"), let box = Data(base64Encoded: sealed),
            let opened = try? AESGCM.open(Array(box), key: sealing, associatedData: associatedData)
        else { return nil }
        return (String(decoding: opened, as: UTF8.self), expires)
    }

    private func store(_ made: (token: String, expires: Int64)) throws {
        let box = try AESGCM.seal(Array(made.token.utf8), key: sealing, associatedData: associatedData)
        try database.execute(
            """
            INSERT INTO fcm_access_tokens (project_id, client_email, token, expires_at) VALUES ($1, $2, $3, $4)
            ON CONFLICT (project_id) DO UPDATE SET client_email = excluded.client_email, token = excluded.token,
                expires_at = excluded.expires_at
            """,
            [
                .text(settings.projectID), .text(settings.clientEmail), .text(Data(box).base64EncodedString()),
                .integer(made.expires),
            ])
    }

    /// What a sealed token is bound to: its project and service account.
    private var associatedData: [UInt8] {
        Array("fcm-access-token\u{0}\(settings.projectID)\u{0}\(settings.clientEmail)".utf8)
    }
}
