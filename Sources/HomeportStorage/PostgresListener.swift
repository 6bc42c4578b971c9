import CLibPQ
import Foundation
import HomeportLifecycle

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
package final class PostgresListener: Sendable {
    /// What the listener reports.
    package enum Event: Sendable, Equatable {
        /// Listening: notifications from now on arrive.
        case ready
        /// A notification with its payload.
        case notified(String)
        /// The connection is gone; notifications are missed until the next `ready`.
        case lost
    }

    private let thread: ServiceThread

    /// A listener on `channel` of the database at `url`; nothing happens until ``start()``.
    /// `channel` must be a plain identifier.
    package init(url: String, channel: String, onEvent: @escaping @Sendable (Event) -> Void) {
        precondition(channel.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") })
        thread = ServiceThread("homeport.listen", stopTimeout: .seconds(5)) { thread in
            Self.run(on: thread, connect: { Self.connect(url: url, channel: channel) }, onEvent: onEvent)
        }
    }

    /// Starts the thread: connects, listens, and reconnects whenever the connection breaks.
    package func start() {
        thread.start()
    }

    /// Stops the thread (within a quarter of a second) and closes its connection.
    package func stop() {
        thread.stop()
    }

    private static func run(
        on thread: ServiceThread, connect: () -> OpaquePointer?, onEvent: @Sendable (Event) -> Void
    ) {
        while !thread.isStopping {
            if let connection = connect() {
                onEvent(.ready)
                listen(on: connection, until: thread, onEvent: onEvent)
                PQfinish(connection)
                onEvent(.lost)
            }
            // A pause before reconnecting, short: the cache waits for it.
            thread.rest(upTo: .milliseconds(200))
        }
    }

    /// A connection to the database at `url` that listens on `channel`, or `nil`.
    private static func connect(url: String, channel: String) -> OpaquePointer? {
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
    private static func listen(
        on connection: OpaquePointer, until thread: ServiceThread, onEvent: @Sendable (Event) -> Void
    ) {
        let descriptor = PQsocket(connection)
        guard descriptor >= 0 else { return }
        while !thread.isStopping {
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

extension PostgresListener: Service {
    package var name: String { thread.name }
}
