import Foundation
import HomeportWire
import Testing

@Suite("Wire: server identity")
struct ServerIdentityTests {
    @Test("instanceId is written in lowercase whatever case it was parsed from")
    func lowercaseOnTheWire() throws {
        let id = try #require(InstanceID("6F1C2B7E-0A4D-4C3B-9E5F-1A2B3C4D5E6F"))
        #expect(id.description == "6f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f")
        let data = try JSONEncoder().encode(ServerIdentity(product: "homeport", instanceId: id))
        #expect(String(decoding: data, as: UTF8.self).contains("6f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f"))
    }

    @Test("the identity body has exactly product, protocolVersion and instanceId")
    func exactlyThreeFields() throws {
        let identity = ServerIdentity(product: "bookorbit", instanceId: InstanceID(UUID()))
        let object = try #require(
            JSONSerialization.jsonObject(with: JSONEncoder().encode(identity)) as? [String: Any])
        #expect(Set(object.keys) == ["product", "protocolVersion", "instanceId"])
        #expect(object["protocolVersion"] as? Int == 1)
        #expect(object["product"] as? String == "bookorbit")
    }

    @Test(
        "decoding refuses an instanceId that is not a UUID",
        arguments: [
            #""not-a-uuid""#, #""""#, "42", "null", #""6f1c2b7e-0a4d-4c3b-9e5f""#,
            // Foundation's UUID(uuidString:) on Linux reads the first three as a UUID
            // (`+f1c2b7e-…` as 0f1c2b7e-…).
            #""+f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f""#, #"" f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f""#,
            #""0x1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f""#, #""6f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f ""#,
        ])
    func rejectsNonUUID(value: String) {
        let json = #"{"product":"homeport","protocolVersion":1,"instanceId":\#(value)}"#
        #expect(throws: DecodingError.self) {
            try JSONDecoder().decode(ServerIdentity.self, from: Data(json.utf8))
        }
    }

    @Test("decoding ignores fields it does not know")
    func ignoresUnknownFields() throws {
        let json =
            #"{"product":"homeport","protocolVersion":1,"instanceId":"6f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f","x":1}"#
        let identity = try JSONDecoder().decode(ServerIdentity.self, from: Data(json.utf8))
        #expect(identity.instanceId.description == "6f1c2b7e-0a4d-4c3b-9e5f-1a2b3c4d5e6f")
    }

    @Test("the error envelope is {error: {code, message}}")
    func errorEnvelopeShape() throws {
        let data = try JSONEncoder().encode(ErrorEnvelope(code: "not_found", message: "No route."))
        let object = try #require(JSONSerialization.jsonObject(with: data) as? [String: Any])
        let error = try #require(object["error"] as? [String: Any])
        #expect(Set(object.keys) == ["error"])
        #expect(error["code"] as? String == "not_found")
        #expect(error["message"] as? String == "No route.")
    }
}
