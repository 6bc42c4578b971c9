import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire
import Synchronization

extension Router where Context == RequestContext {
    /// Declares `GET /api/v1/server-identity`: public, credential-free, `Cache-Control: no-store`.
    ///
    /// Its group has no session reader: the handler reads no credential, so the answer is the
    /// same with or without one, and it sets no cookie. When the identity cannot be read it
    /// answers 503 with the JSON error shape; it never invents an identifier.
    ///
    /// Without a query the answer is exactly the three members the protocol fixes. Asked with
    /// `?challenge=` (base64url of 16 to 64 bytes), an installation with a key adds it
    /// (`publicKey`) and its signature of ``IdentityProof/message(instanceId:challenge:host:)``
    /// for the challenge and the host the request named (`signature`), within each client's
    /// ``ChallengeBudget`` (429 past it). A malformed challenge, or one without a `Host`, is 400;
    /// one for a local network's address asked from elsewhere is 403 (``LocalAuthority``).
    mutating func addIdentityRoute(store: IdentityStore, product: String, logger: Logger, budget: ChallengeBudget) {
        // The plain body, and the proof's body up to its signature, encoded once per identifier
        // (a replica may see a reset and answer a new one).
        let body = Mutex<(id: InstanceID, bytes: Data)?>(nil)
        let proofHead = Mutex<(id: InstanceID, publicKey: String, bytes: Data)?>(nil)
        let logger = logger.withLabel("homeport.identity")
        group(HomeportPath.serverIdentity, middleware: [NoStoreMiddleware()]) { identity in
            identity.get("") { request, _ in
                let current: InstallationIdentity
                do {
                    current = try store.current()
                } catch {
                    logger.error("server identity unavailable", metadata: ["error": String(describing: error)])
                    throw Self.identityUnavailable
                }
                if current.keyWithheld {
                    logger.error(
                        "server identity unavailable",
                        metadata: [
                            "error":
                                "the installation key cannot be opened: no secrets key, or not the one it was sealed with"
                        ])
                    throw Self.identityUnavailable
                }
                guard let challenge = request.query[IdentityProof.challengeParameter] else {
                    if let cached = body.withLock({ $0 }), cached.id == current.instanceID {
                        return .json(bytes: cached.bytes)
                    }
                    let bytes = try HTTPResponse.encode(
                        ServerIdentity(product: product, instanceId: current.instanceID))
                    body.withLock { $0 = (current.instanceID, bytes) }
                    return .json(bytes: bytes)
                }
                guard IdentityProof.readChallenge(challenge) != nil else {
                    throw HTTPError.invalidField(
                        IdentityProof.challengeParameter,
                        "The challenge must be base64url without padding of \(IdentityProof.minimumChallengeBytes) to \(IdentityProof.maximumChallengeBytes) random bytes."
                    )
                }
                guard let host = request.headers["Host"].flatMap(IdentityProof.host(of:)) else {
                    throw HTTPError.badRequest(
                        message: "A challenge is signed for the Host the request names; send one.")
                }
                // Without a key there is nothing to sign: the answer says who it is, as without a challenge.
                guard let key = current.key, let publicKey = current.publicKey else {
                    return try .json(ServerIdentity(product: product, instanceId: current.instanceID))
                }
                guard LocalAuthority.mayProve(host: host, for: request) else {
                    throw HTTPError(
                        status: 403, code: APIErrorCode.challengeRefused,
                        message:
                            "A challenge for a local network's address is signed only for a request from a local network: \(host) was asked from \(request.remoteAddress) or through a proxy that names another address."
                    )
                }
                guard budget.take(client: request.remoteAddress) else {
                    throw HTTPError(
                        status: 429, code: APIErrorCode.rateLimited,
                        message: "Too many identity challenges from this address. Try again in a second.",
                        headers: ["Retry-After": "1"])
                }
                let signature = try key.sign(
                    IdentityProof.message(instanceId: current.instanceID, challenge: challenge, host: host))
                var head: Data
                if let cached = proofHead.withLock({ $0 }), cached.id == current.instanceID,
                    cached.publicKey == publicKey
                {
                    head = cached.bytes
                } else {
                    // The answer without its signature, its closing brace left open.
                    head = try HTTPResponse.encode(
                        ServerIdentity(product: product, instanceId: current.instanceID, publicKey: publicKey))
                    guard head.last == UInt8(ascii: "}") else { throw HTTPError.internalError }
                    head.removeLast()
                    proofHead.withLock { $0 = (current.instanceID, publicKey, head) }
                }
                head.append(contentsOf: Array(#","signature":""#.utf8))
                head.append(contentsOf: Array(IdentityProof.base64URL(signature).utf8))
                head.append(contentsOf: Array(#""}"#.utf8))
                return .json(bytes: head)
            }
        }
    }

    private static var identityUnavailable: HTTPError {
        HTTPError.unavailable(
            code: APIErrorCode.identityUnavailable,
            message: "The server cannot read its installation identity right now. Try again later.")
    }

    /// Adds `GET /readyz`, for a load balancer: 200 `{"status":"ready"}` when the database
    /// answers and holds every migration of every component this build knows (Homeport's and the
    /// product's); else 503 with `database_unavailable`, or `migrations_pending` with Homeport's
    /// versions in `pending` and every component's in `components`.
    mutating func addReadinessRoute(database: any Database, migrators: [Migrator] = [HomeportSchema.migrator]) {
        let ready = Data(#"{"status":"ready"}"#.utf8)
        group("/readyz", middleware: [NoStoreMiddleware()]) { readiness in
            readiness.get("") { _, _ in
                var pending: [String: [Int]] = [:]
                do {
                    for migrator in migrators {
                        let versions = try migrator.pendingVersions(database)
                        if !versions.isEmpty { pending[migrator.component] = versions }
                    }
                } catch {
                    return .json(bytes: Data(#"{"status":"database_unavailable"}"#.utf8), status: 503)
                }
                guard pending.isEmpty else {
                    return try .json(
                        ReadinessAnswer(
                            status: "migrations_pending", pending: pending[Migrator.homeportComponent] ?? [],
                            components: pending),
                        status: 503)
                }
                return .json(bytes: ready)
            }
        }
    }

    /// Adds `GET /healthz`: the process is up and serving (no database access).
    mutating func addHealthRoute() {
        let body = Data(#"{"status":"ok"}"#.utf8)
        group("/healthz", middleware: [NoStoreMiddleware()]) { health in
            health.get("") { _, _ in .json(bytes: body) }
        }
    }
}

/// `/readyz`'s answer when migrations are missing.
private struct ReadinessAnswer: Encodable {
    var status: String
    /// Homeport's own pending versions.
    var pending: [Int]
    /// Every component with pending versions, by name.
    var components: [String: [Int]]
}
