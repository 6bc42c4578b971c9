/// Work a process runs beside its requests (a listener, a heartbeat, a sender, a timer): started
/// with the others of its ``ServiceGroup`` in order, stopped in reverse.
///
/// Starting and stopping are synchronous calls, not an `async run()` held until cancelled:
/// Homeport's services run on threads and timers of their own (libmicrohttpd's workers, libpq's
/// blocking calls, password hashing), never on Swift concurrency's cooperative pool, where a
/// blocking `run()` would hold one of its threads (on a two-core machine, half of the pool).
package protocol Service: Sendable {
    /// Names it in logs.
    var name: String { get }

    /// Starts it; what it runs in the background goes on until ``stop()``. A service that throws
    /// has started nothing.
    func start() throws

    /// Stops it, and returns once the work it was doing has ended (so that what that work uses,
    /// the database for one, can be closed next). A second call does nothing.
    func stop()
}
