import Foundation
import HomeportServer
import Synchronization

/// A clock that only moves when told to; for tests.
public final class ManualWallClock: WallClock {
    private let current: Mutex<Date>

    /// Starts at `start`.
    public init(_ start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Mutex(start)
    }

    /// The clock's time.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward.
    public func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}
