import Foundation
import HomeportServer
import Synchronization

/// The clock a ``TestServer`` runs on: it moves only when told to, so that an expiry, a budget's
/// window or a product's due date comes when the test says.
public final class TestClock: WallClock {
    private let current: Mutex<Date>

    /// A clock reading `start`.
    public init(_ start: Date) {
        current = Mutex(start)
    }

    /// The clock's time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward by `duration`.
    public func advance(by duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
