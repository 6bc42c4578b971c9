import Synchronization

/// Services started in the order given and stopped in reverse: a service may rely on those
/// before it while it runs, and while it stops.
///
/// When one fails to start, those already started are stopped, in reverse, and the error is
/// thrown: nothing is left running.
package final class ServiceGroup: Sendable {
    /// The services, in starting order.
    package let services: [any Service]
    private let started = Mutex<[any Service]>([])
    private let report: @Sendable (String, String) -> Void

    /// A group of `services`, in starting order; `report` hears each start and stop (a verb, then
    /// the service's name), for a debug log.
    package init(_ services: [any Service], report: @escaping @Sendable (String, String) -> Void = { _, _ in }) {
        self.services = services
        self.report = report
    }

    /// Starts each service in order.
    package func start() throws {
        for service in services {
            do {
                try service.start()
            } catch {
                report("failed to start", service.name)
                stop()
                throw error
            }
            started.withLock { $0.append(service) }
            report("started", service.name)
        }
    }

    /// Stops the services started, the last one first; a second call does nothing.
    package func stop() {
        let running = started.withLock { started in
            defer { started.removeAll() }
            return started
        }
        for service in running.reversed() {
            service.stop()
            report("stopped", service.name)
        }
    }
}
