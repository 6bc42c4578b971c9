// The allauth app envelope a client reads from `/_allauth/app/v1/…`, Homeport's own error shape,
// and the request bodies the app door decodes. See fuzz/README.md.
import Foundation
import HomeportWire

/// One input: the bytes are a JSON body.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Data(bytes: data, count: size)
    if let envelope = roundTrip(AuthEnvelope.self, body) { checkEnvelope(envelope) }
    roundTrip(ErrorEnvelope.self, body)
    roundTrip(AuthRequest.Credentials.self, body)
    roundTrip(AuthRequest.PasswordChange.self, body)
    roundTrip(AuthRequest.PasswordResetRequest.self, body)
    roundTrip(AuthRequest.PasswordReset.self, body)
    roundTrip(StandingAnswer.self, body)
    return 0
}

/// What the encoder promises about `meta`: `is_authenticated` is always written (as `null` when
/// unknown), `session_token` only when there is one.
func checkEnvelope(_ envelope: AuthEnvelope) {
    guard let meta = envelope.meta else { return }
    guard let encoded = try? JSONEncoder().encode(meta),
        let object = try? JSONSerialization.jsonObject(with: encoded) as? [String: Any]
    else { fatalError("meta does not encode to a JSON object: \(meta)") }
    require(
        object["is_authenticated"] != nil, "meta without is_authenticated: \(String(decoding: encoded, as: UTF8.self))")
    require((object["session_token"] != nil) == (meta.sessionToken != nil), "meta's session_token appears or vanishes")
}

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
