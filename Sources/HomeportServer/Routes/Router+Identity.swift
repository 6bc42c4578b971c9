import Foundation
import HomeportHTTP
import HomeportLogging
import HomeportWire
import Synchronization

extension Router {
    /// Adds `GET /api/v1/server-identity`: public, credential-free, `Cache-Control: no-store`.
    ///
    /// The handler reads no header at all, so the answer is the same with or without credentials,
    /// and it sets no cookie. When the identity cannot be read it answers 503 with the JSON error
    /// shape; it never invents an identifier.
    public mutating func addIdentityRoute(store: IdentityStore, product: String, logger: Logger) {
        let body = Mutex<Data?>(nil)
        let logger = logger.withLabel("homeport.identity")
        get(HomeportPath.serverIdentity) { _ in
            let bytes: Data
            if let cached = body.withLock({ $0 }) {
                bytes = cached
            } else {
                let id: InstanceID
                do {
                    id = try store.instanceID()
                } catch {
                    logger.error("server identity unavailable", metadata: ["error": String(describing: error)])
                    throw HTTPError.unavailable(
                        code: "identity_unavailable",
                        message: "The server cannot read its installation identity right now. Try again later.")
                }
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                bytes = try encoder.encode(ServerIdentity(product: product, instanceId: id))
                body.withLock { $0 = bytes }
            }
            var response = HTTPResponse.json(bytes: bytes)
            response.headers.set("Cache-Control", "no-store")
            return response
        }
    }

    /// Adds `GET /healthz`: the process is up and serving (no database access).
    public mutating func addHealthRoute() {
        let body = Data(#"{"status":"ok"}"#.utf8)
        get("/healthz") { _ in
            var response = HTTPResponse.json(bytes: body)
            response.headers.set("Cache-Control", "no-store")
            return response
        }
    }
}
