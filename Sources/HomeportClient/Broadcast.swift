import Foundation
import Synchronization

/// Values handed to any number of listeners, each an `AsyncStream` of its own: one that stops
/// listening (its task ended, its stream dropped) is let go, and a slow one keeps only the newest
/// values (`buffer`), never holding the sender.
final class Broadcast<Value: Sendable>: Sendable {
    private let listeners = Mutex<[UUID: AsyncStream<Value>.Continuation]>([:])
    private let buffer: Int

    init(buffer: Int = 256) {
        self.buffer = buffer
    }

    /// A new listener's stream, starting with what `first` gives once it listens (so a value
    /// sent meanwhile is not missed).
    func stream(startingWith first: () -> Value? = { nil }) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(buffer))
        let id = UUID()
        listeners.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in
            _ = self?.listeners.withLock { $0.removeValue(forKey: id) }
        }
        if let first = first() { continuation.yield(first) }
        return stream
    }

    /// Hands `value` to every listener.
    func send(_ value: Value) {
        for listener in listeners.withLock({ Array($0.values) }) { listener.yield(value) }
    }

    /// How many listen now.
    var count: Int { listeners.withLock { $0.count } }
}
