import Foundation

/// A value set on one thread and read on another.
public final class LockedBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    /// A box holding `value`.
    public init(_ value: Value) { stored = value }

    /// The value, read or replaced under the lock.
    public var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }

    /// Changes the value under the lock (a read and a write that nothing comes between).
    public func mutate<T>(_ body: (inout Value) -> T) -> T {
        lock.withLock { body(&stored) }
    }
}
