import Dispatch
import Foundation
import Synchronization

/// A bounded pool of connections, opened on demand and reused; broken ones are dropped.
final class ConnectionPool<Connection: DatabaseConnection>: @unchecked Sendable {
    private let lock = NSLock()
    private var idle: [Connection] = []
    private let permits: DispatchSemaphore
    private let waitTimeout: Duration
    private let open: @Sendable () throws -> Connection
    private let closeConnection: @Sendable (Connection) -> Void
    /// Callers that found every connection lent out and had to wait for one.
    let waits = Atomic<Int>(0)

    init(
        maximum: Int, waitTimeout: Duration, open: @escaping @Sendable () throws -> Connection,
        close: @escaping @Sendable (Connection) -> Void
    ) {
        self.permits = DispatchSemaphore(value: max(1, maximum))
        self.waitTimeout = waitTimeout
        self.open = open
        self.closeConnection = close
    }

    deinit {
        drain()
    }

    func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        let seconds = Double(waitTimeout.components.seconds) + Double(waitTimeout.components.attoseconds) / 1e18
        if permits.wait(timeout: .now()) != .success {
            waits.add(1, ordering: .relaxed)
            guard permits.wait(timeout: .now() + seconds) == .success else { throw StorageError.poolExhausted }
        }
        defer { permits.signal() }
        let connection = try lock.withLock { idle.popLast() } ?? open()
        do {
            let result = try body(connection)
            checkIn(connection)
            return result
        } catch {
            checkIn(connection)
            throw error
        }
    }

    func drain() {
        let connections = lock.withLock {
            defer { idle.removeAll() }
            return idle
        }
        connections.forEach(closeConnection)
    }

    private func checkIn(_ connection: Connection) {
        if connection.isBroken {
            closeConnection(connection)
        } else {
            lock.withLock { idle.append(connection) }
        }
    }
}
