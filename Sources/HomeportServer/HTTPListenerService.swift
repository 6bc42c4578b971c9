import HomeportHTTP
import HomeportLifecycle
import HomeportLogging

/// An HTTP listener as a service: started, it listens; stopped, it drains (requests in flight
/// finish within the drain timeout, and any still running then are logged).
struct HTTPListenerService: Service {
    let name: String
    let server: HTTPServer
    let logger: Logger

    func start() throws {
        try server.start()
    }

    func stop() {
        let left = server.shutdown()
        if left > 0 {
            logger.warning(
                "drain timeout passed with requests in flight", metadata: ["listener": name, "requests": String(left)])
        }
    }
}
