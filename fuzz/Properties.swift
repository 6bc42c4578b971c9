// What every harness under fuzz/ checks with: compiled into each target beside its main.swift.
import Foundation

/// Decodes `type`; when that works, encodes, decodes again, and requires the same value and bytes.
@discardableResult
func roundTrip<T: Codable & Equatable>(_ type: T.Type, _ bytes: Data) -> T? {
    guard let first = try? JSONDecoder().decode(T.self, from: bytes) else { return nil }
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys]
    guard let encoded = try? encoder.encode(first) else {
        fatalError("\(T.self) decoded but does not encode: \(first)")
    }
    guard let second = try? JSONDecoder().decode(T.self, from: encoded) else {
        fatalError("\(T.self) does not decode what it encoded: \(String(decoding: encoded, as: UTF8.self))")
    }
    require(second == first, "\(T.self) changed in a round trip: \(first) became \(second)")
    require((try? encoder.encode(second)) == encoded, "\(T.self) encodes differently after a round trip")
    return first
}

/// Traps, so that libFuzzer saves the input, when a property does not hold.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("property broken: \(message())") }
}
