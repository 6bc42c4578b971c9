import CLibPQ
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One PostgreSQL connection that `LISTEN`s on a channel, on a thread of its own, and says what
/// happens: ready (listening), a notification, or lost (the connection broke; it reconnects).
///
/// Between `lost` and the next `ready`, notifications sent meanwhile are missed: a listener's
/// user must not trust what the notifications keep fresh until `ready` again.
public final class PostgresListener: @unchecked Sendable {
    /// What the listener reports.
    public enum Event: Sendable, Equatable {
        /// Listening: notifications from now on arrive.
        case ready
        /// A notification with its payload.
        case notified(String)
        /// The connection is gone; notifications are missed until the next `ready`.
        case lost
    }

    private let url: String
    private let channel: String
    private let onEvent: @Sendable (Event) -> Void
    private let stopped = NSLock()
    private var isStopped = false
    private let finished = DispatchSemaphore(value: 0)

    /// A listener on `channel` of the database at `url`; nothing happens until ``start()``.
    /// `channel` must be a plain identifier.
    public init(url: String, channel: String, onEvent: @escaping @Sendable (Event) -> Void) {
        precondition(channel.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        self.url = url
        self.channel = channel
        self.onEvent = onEvent
    }

    /// Starts the thread: connects, listens, and reconnects whenever the connection breaks.
    public func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "homeport.listen"
        thread.start()
    }

    /// Stops the thread (within a quarter of a second) and closes its connection.
    public func stop() {
        let first = stopped.withLock {
            defer { isStopped = true }
            return !isStopped
        }
        if first { _ = finished.wait(timeout: .now() + 5) }
    }

    private var shouldStop: Bool { stopped.withLock { isStopped } }

    private func run() {
        while !shouldStop {
            if let connection = connect() {
                onEvent(.ready)
                listen(on: connection)
                PQfinish(connection)
                onEvent(.lost)
            }
            // A pause before reconnecting, short: the cache waits for it.
            for _ in 0..<4 where !shouldStop { usleep(50_000) }
        }
    }

    /// A connection that listens on the channel, or `nil`.
    private func connect() -> OpaquePointer? {
        let keywords = ["connect_timeout", "application_name", "dbname"]
        let values = ["5", "homeport-server-listen", url]
        let duplicates = (keywords + values).map { strdup($0) }
        defer { duplicates.forEach { free($0) } }
        let keywordPointers = duplicates[0..<3].map { UnsafePointer($0) } + [nil]
        let valuePointers = duplicates[3..<6].map { UnsafePointer($0) } + [nil]
        guard let connection = PQconnectdbParams(keywordPointers, valuePointers, 1) else { return nil }
        guard PQstatus(connection) == CONNECTION_OK else {
            PQfinish(connection)
            return nil
        }
        let result = PQexec(connection, "LISTEN \(channel)")
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else {
            PQfinish(connection)
            return nil
        }
        return connection
    }

    /// Hands on notifications until the connection breaks or the listener stops.
    private func listen(on connection: OpaquePointer) {
        let descriptor = PQsocket(connection)
        guard descriptor >= 0 else { return }
        while !shouldStop {
            var waiting = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiting, 1, 250)
            if ready < 0 && errno != EINTR { return }
            guard ready > 0 else { continue }
            guard PQconsumeInput(connection) == 1, PQstatus(connection) == CONNECTION_OK else { return }
            while let notification = PQnotifies(connection) {
                let payload = notification.pointee.extra.map { String(cString: $0) } ?? ""
                PQfreemem(notification)
                onEvent(.notified(payload))
            }
        }
    }
}
