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
