import HomeportLifecycle
import HomeportLogging

/// An HTTP listener as a service: started, it listens; stopped, it drains (requests in flight
/// finish within the drain timeout, and any still running then are logged).
package struct HTTPListenerService: Service {
    package let name: String
    let server: HTTPServer
    let logger: Logger

    /// `server` as a service named `name`, logging to `logger` what the drain left.
    package init(name: String, server: HTTPServer, logger: Logger) {
        self.name = name
        self.server = server
        self.logger = logger
    }

    package func start() throws {
        try server.start()
    }

    package func stop() {
        let left = server.shutdown()
        if left > 0 {
            logger.warning(
                "drain timeout passed with requests in flight", metadata: ["listener": name, "requests": String(left)])
        }
    }
}
