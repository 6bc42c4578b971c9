import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportWire
import Synchronization

extension Router where Context == RequestContext {
    /// Declares `GET /api/v1/server-identity`: public, credential-free, `Cache-Control: no-store`.
    ///
    /// Its group has no session reader: the handler reads no header at all, so the answer is the
    /// same with or without credentials, and it sets no cookie. When the identity cannot be read
    /// it answers 503 with the JSON error shape; it never invents an identifier.
    mutating func addIdentityRoute(store: IdentityStore, product: String, logger: Logger) {
        // The body, encoded once per identifier (a replica may see a reset and answer a new one).
        let body = Mutex<(id: InstanceID, bytes: Data)?>(nil)
        let logger = logger.withLabel("homeport.identity")
        group(HomeportPath.serverIdentity, middleware: [NoStoreMiddleware()]) { identity in
            identity.get("") { _, _ in
                let id: InstanceID
                do {
                    id = try store.instanceID()
                } catch {
                    logger.error("server identity unavailable", metadata: ["error": String(describing: error)])
                    throw HTTPError.unavailable(
                        code: APIErrorCode.identityUnavailable,
                        message: "The server cannot read its installation identity right now. Try again later.")
                }
                if let cached = body.withLock({ $0 }), cached.id == id { return .json(bytes: cached.bytes) }
                let bytes = try HTTPResponse.encode(ServerIdentity(product: product, instanceId: id))
                body.withLock { $0 = (id, bytes) }
                return .json(bytes: bytes)
            }
        }
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
