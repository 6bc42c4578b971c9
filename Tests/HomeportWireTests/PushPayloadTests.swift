import Foundation
import HomeportWire
import Testing

@Suite("Push payloads and notification wire types")
struct PushPayloadTests {
    let server = InstanceID("6f1c2a3b-0000-4000-8000-000000000001")!

    @Test("a payload encodes exactly PROTOCOL §4's shape, under the product's key")
    func shape() throws {
        let payload = PushPayload(
            aps: .init(
                alert: .init(title: "Turn ended"), threadID: NotificationThread.namespaced("chat:42", server: server)),
            appData: PushAppData(s: server, c: "homeport/core:chat.turn-ended", id: 42, mv: "abc"))
        let text = String(decoding: try payload.encoded(appDataKey: "officer"), as: UTF8.self)
        #expect(
            text
                == #"{"aps":{"alert":{"title":"Turn ended"},"mutable-content":1,"thread-id":"6f1c2a3b-0000-4000-8000-000000000001:chat:42"},"officer":{"c":"homeport/core:chat.turn-ended","id":42,"mv":"abc","s":"6f1c2a3b-0000-4000-8000-000000000001"}}"#
        )
        let decoded = try PushPayload(decoding: Data(text.utf8), appDataKey: "officer")
        #expect(decoded == payload)
        let otherKey = try PushPayload(decoding: Data(text.utf8))
        #expect(otherKey.appData == nil, "another product's key is not ours")
    }

    @Test("a product's data travels as d, and a payload without it has none")
    func productData() throws {
        let payload = PushPayload(
            aps: .init(alert: .init(title: "Shared")),
            appData: PushAppData(s: server, c: "journal:entry.shared", id: nil, mv: "v", d: ["entry": "42"]))
        let text = String(decoding: try payload.encoded(), as: UTF8.self)
        #expect(text.contains(#""d":{"entry":"42"}"#))
        #expect(try PushPayload(decoding: Data(text.utf8)) == payload)
        #expect(NotificationData.problem(["entry": "42", "path.to-x_1": ""]) == nil)
        #expect(NotificationData.problem(["é": "x"]) != nil)
        #expect(NotificationData.problem(["k": "line\nbreak"]) != nil)
        #expect(NotificationData.problem(Dictionary(uniqueKeysWithValues: (0..<17).map { ("k\($0)", "") })) != nil)
    }

    @Test("a payload without s, or with an s that is not a UUID")
    func optionalServer() throws {
        let old = #"{"aps":{"alert":{"title":"x"}},"homeport":{"c":"a:b","id":1}}"#
        #expect(try PushPayload(decoding: Data(old.utf8)).appData?.s == nil)
        let bad = #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"https://books.example","c":"a:b"}}"#
        #expect(throws: DecodingError.self) { try PushPayload(decoding: Data(bad.utf8)) }
    }

    @Test("thread ids are namespaced by server, and only the right server gets its thread back")
    func threads() {
        let other = InstanceID("6f1c2a3b-0000-4000-8000-000000000002")!
        let namespaced = NotificationThread.namespaced("chat:42", server: server)
        #expect(NotificationThread.local(namespaced, server: server) == "chat:42")
        #expect(NotificationThread.local(namespaced, server: other) == nil)
    }
}
