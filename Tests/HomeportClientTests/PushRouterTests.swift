import Foundation
import HomeportClient
import HomeportWire
import Testing

/// Routing a push to the enrolled server that sent it, failing closed (PROTOCOL §4, seed 002).
@Suite("Push routing: by s, to the server that sent it, or to nobody")
struct PushRouterTests {
    let a = InstanceID(UUID())
    let b = InstanceID(UUID())

    func servers() throws -> [ServerRecord] {
        [try record(a, primary: "http://127.0.0.1:1"), try record(b, primary: "http://127.0.0.1:2")]
    }

    /// A payload as a Homeport server builds it.
    func payload(
        s: InstanceID?, thread: String? = "chat:42", id: Int64? = 42, mv: String? = "m1", key: String = "homeport",
        title: String = "Turn ended"
    ) throws -> Data {
        try PushPayload(
            aps: .init(
                alert: .init(title: title),
                threadID: thread.map { thread in s.map { NotificationThread.namespaced(thread, server: $0) } ?? thread }
            ),
            appData: PushAppData(s: s, c: "homeport/core:chat.turn-ended", id: id, mv: mv)
        ).encoded(appDataKey: key)
    }

    @Test("each payload goes to the server its s names: thread namespaced, deep link on that server")
    func routesBySID() throws {
        let router = PushRouter()
        let fromA = try router.route(try payload(s: a), among: try servers())
        let fromB = try router.route(try payload(s: b, mv: "m2"), among: try servers())
        #expect(fromA.server == a.description)
        #expect(fromA.attribution == .serverID)
        #expect(fromA.thread == "chat:42")
        #expect(fromA.threadID == "\(a):chat:42")
        #expect(fromA.deepLink?.absoluteString == "homeport://session/42")
        #expect(fromA.catalogueVersion == "m1")
        #expect(fromB.server == b.description)
        #expect(fromB.threadID == "\(b):chat:42")
        #expect(fromA.threadID != fromB.threadID, "the same chat id on two servers never shares a banner")
    }

    @Test(
        "what else APNs allows routes by s too: a string alert (its body), a dictionary without a title, a silent push"
    )
    func otherAPNsShapes() throws {
        let router = PushRouter()
        let app = #""homeport": {"s": "\#(b)", "c": "homeport/core:chat.turn-ended", "id": 7}"#
        let text = try router.route(Data(#"{"aps": {"alert": "Your move"}, \#(app)}"#.utf8), among: try servers())
        #expect(text.server == b.description && text.attribution == .serverID)
        #expect(text.title == "" && text.body == "Your move" && !text.isSilent)
        let untitled = try router.route(
            Data(#"{"aps": {"alert": {"body": "Your move"}, "thread-id": "\#(b):chat:7"}, \#(app)}"#.utf8),
            among: try servers())
        #expect(untitled.title == "" && untitled.body == "Your move" && untitled.threadID == "\(b):chat:7")
        let silent = try router.route(Data(#"{"aps": {"content-available": 1}, \#(app)}"#.utf8), among: try servers())
        #expect(silent.server == b.description && silent.isSilent && silent.title == "" && silent.body == nil)
        #expect(silent.deepLink?.absoluteString == "homeport://session/7")
        // Not silent: an empty aps shows nothing and wakes nothing, but is still b's.
        let empty = try router.route(Data(#"{"aps": {}, \#(app)}"#.utf8), among: try servers())
        #expect(empty.server == b.description && !empty.isSilent)
    }

    @Test("those shapes fail closed like any other: no s among two servers, an s of nobody's, an alert given twice")
    func otherAPNsShapesFailClosed() throws {
        let router = PushRouter()
        let code = #""c": "homeport/core:chat.turn-ended""#
        #expect(throws: PushRoutingFailure.unattributable(enrolled: 2)) {
            try router.route(
                Data(#"{"aps": {"content-available": 1}, "homeport": {\#(code)}}"#.utf8), among: try servers())
        }
        let stranger = InstanceID(UUID())
        #expect(throws: PushRoutingFailure.unknownServer(stranger)) {
            try router.route(
                Data(#"{"aps": {"alert": "hi"}, "homeport": {"s": "\#(stranger)", \#(code)}}"#.utf8),
                among: try servers())
        }
        #expect(throws: PushRoutingFailure.ambiguous) {
            try router.route(
                Data(#"{"aps": {"alert": "one", "alert": "two"}, "homeport": {"s": "\#(a)", \#(code)}}"#.utf8),
                among: try servers())
        }
        for alert in ["42", "[\"x\"]", "{\"title\": 5}"] {
            #expect(throws: PushRoutingFailure.self, "alert \(alert)") {
                try router.route(
                    Data(#"{"aps": {"alert": \#(alert)}, "homeport": {"s": "\#(a)", \#(code)}}"#.utf8),
                    among: try servers())
            }
        }
    }

    @Test("a silent push is written without an alert, and read back the same")
    func silentRoundTrip() throws {
        let silent = PushPayload(
            aps: .init(alert: nil, mutableContent: nil, contentAvailable: 1),
            appData: PushAppData(s: a, c: "homeport/core:sync", id: nil, mv: nil))
        let bytes = try silent.encoded()
        #expect(String(decoding: bytes, as: UTF8.self).hasPrefix(#"{"aps":{"content-available":1},"#))
        #expect(try PushPayload(decoding: bytes) == silent)
    }

    @Test("an s that names no enrolled server is nobody's, even with a single server enrolled")
    func unknownServerFailsClosed() throws {
        let stranger = InstanceID(UUID())
        let router = PushRouter()
        #expect(throws: PushRoutingFailure.unknownServer(stranger)) {
            try router.route(try payload(s: stranger), among: try servers())
        }
        #expect(throws: PushRoutingFailure.unknownServer(stranger)) {
            try router.route(try payload(s: stranger), among: [try servers()[0]])
        }
    }

    @Test("a payload without s is attributed only to the one enrolled server, an older one without an id")
    func missingSID() throws {
        let router = PushRouter()
        var older = try servers()[0]
        older.instanceID = nil
        let only = try router.route(try payload(s: nil), among: [older])
        #expect(only.server == older.key)
        #expect(only.attribution == .onlyServer)
        #expect(
            only.threadID == "\(older.key):chat:42", "a bare thread id is namespaced with the server it was routed to")
        // One server left, with an id: it always names itself, so this push is another's (one removed).
        #expect(throws: PushRoutingFailure.unattributable(enrolled: 1)) {
            try router.route(try payload(s: nil), among: [try servers()[0]])
        }
        #expect(throws: PushRoutingFailure.unattributable(enrolled: 2)) {
            try router.route(try payload(s: nil), among: try servers())
        }
        #expect(throws: PushRoutingFailure.unattributable(enrolled: 0)) {
            try router.route(try payload(s: nil), among: [])
        }
    }

    @Test(
        "garbage fails closed",
        arguments: [
            "", "not json", "[]", "{}", "null", #"{"homeport":{"c":"x"}}"#,
            #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"not-a-uuid","c":"x"}}"#,
            #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":42,"c":"x"}}"#,
            #"{"aps":{"alert":{"title":"x"}},"homeport":"#, "\u{FEFF}{",
        ])
    func garbage(text: String) throws {
        #expect(throws: PushRoutingFailure.self) {
            try PushRouter().route(Data(text.utf8), among: try servers())
        }
    }

    @Test("a payload over the size limit is not read")
    func oversized() throws {
        let large = try payload(s: a, title: String(repeating: "x", count: PushRouter.maximumBytes))
        #expect(throws: PushRoutingFailure.self) { try PushRouter().route(large, among: try servers()) }
    }

    @Test("a payload without the product's block fails closed; the product's own key routes it")
    func appDataKey() throws {
        let officer = try payload(s: a, key: "officer")
        #expect(throws: PushRoutingFailure.noAppData(key: "homeport")) {
            try PushRouter().route(officer, among: try servers())
        }
        let routed = try PushRouter(appDataKey: "officer", deepLinkScheme: "officer-chat").route(
            officer, among: try servers())
        #expect(routed.server == a.description)
        #expect(routed.deepLink?.absoluteString == "officer-chat://session/42")
        #expect(throws: PushRoutingFailure.noAppData(key: "officer")) {
            try PushRouter(appDataKey: "officer").route(try payload(s: a), among: try servers())
        }
    }

    @Test("a thread id namespaced with another server's id is refused, not merged")
    func threadOfAnotherServer() throws {
        let text = #"{"aps":{"alert":{"title":"x"},"thread-id":"\#(b):chat:1"},"homeport":{"s":"\#(a)","c":"x"}}"#
        #expect(throws: PushRoutingFailure.threadOfAnotherServer(b)) {
            try PushRouter().route(Data(text.utf8), among: try servers())
        }
        let bad = #"{"aps":{"alert":{"title":"x"},"thread-id":"\#(a):chat 1/../x"},"homeport":{"s":"\#(a)","c":"x"}}"#
        #expect(throws: PushRoutingFailure.self) { try PushRouter().route(Data(bad.utf8), among: try servers()) }
    }

    /// An FCM message as an Android app receives it from a Homeport server.
    func fcm(_ data: [String: String], title: String = "Turn ended") throws -> Data {
        try JSONSerialization.data(withJSONObject: ["data": data, "notification": ["title": title]])
    }

    @Test("an FCM data message routes by its s as an APNs payload does; a bad one fails closed")
    func fcmMessages() throws {
        let router = PushRouter()
        let fromB = try router.route(
            try fcm([
                "s": b.description, "c": "homeport/core:chat.turn-ended", "id": "42", "mv": "m2",
                "thread": "\(b):chat:42", "d": #"{"entry":"7"}"#,
            ]), among: try servers())
        #expect(fromB.server == b.description && fromB.attribution == .serverID)
        #expect(fromB.threadID == "\(b):chat:42" && fromB.thread == "chat:42")
        #expect(fromB.deepLink?.absoluteString == "homeport://session/42")
        #expect(fromB.catalogueVersion == "m2" && fromB.title == "Turn ended")
        let stranger = InstanceID(UUID())
        #expect(throws: PushRoutingFailure.unknownServer(stranger)) {
            try router.route(try fcm(["s": stranger.description, "c": "x"]), among: try servers())
        }
        #expect(throws: PushRoutingFailure.threadOfAnotherServer(a)) {
            try router.route(try fcm(["s": b.description, "c": "x", "thread": "\(a):chat:42"]), among: try servers())
        }
        for bad in [["s": "not-an-id", "c": "x"], ["s": b.description], ["s": b.description, "c": "x", "id": "4x"]] {
            #expect(throws: PushRoutingFailure.self) { try router.route(try fcm(bad), among: try servers()) }
        }
        let sTwice = #"{"data":{"s":"\#(a)","s":"\#(b)","c":"x"},"notification":{"title":"x"}}"#
        #expect(throws: PushRoutingFailure.ambiguous) { try router.route(Data(sTwice.utf8), among: try servers()) }
    }

    @Test("a key given twice with different values is refused (two readers must not see two servers)")
    func duplicateKeys() throws {
        let block = { (id: InstanceID) in #"{"s":"\#(id)","c":"x","id":1}"# }
        let twice = #"{"aps":{"alert":{"title":"x"}},"homeport":\#(block(a)),"homeport":\#(block(b))}"#
        #expect(throws: PushRoutingFailure.ambiguous) { try PushRouter().route(Data(twice.utf8), among: try servers()) }
        let sTwice = #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(a)","s":"\#(b)","c":"x"}}"#
        #expect(throws: PushRoutingFailure.ambiguous) {
            try PushRouter().route(Data(sTwice.utf8), among: try servers())
        }
        let same = #"{"aps":{"alert":{"title":"x"}},"homeport":\#(block(a)),"homeport":\#(block(a))}"#
        #expect(try PushRouter().route(Data(same.utf8), among: try servers()).server == a.description)
    }

    @Test("s in capitals names the same server; no id means no deep link; a bad scheme makes none")
    func details() throws {
        let upper = #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(a.description.uppercased())","c":"x"}}"#
        let routed = try PushRouter().route(Data(upper.utf8), among: try servers())
        #expect(routed.server == a.description)
        #expect(routed.deepLink == nil)
        #expect(routed.threadID == nil)
        #expect(
            try PushRouter(deepLinkScheme: "bad scheme").route(try payload(s: a), among: try servers()).deepLink == nil)
        #expect(PushRouter.isValidScheme("officer-chat"))
        #expect(!PushRouter.isValidScheme("1abc"))
        #expect(!PushRouter.isValidScheme("a/b"))
    }

    @Test("server text in a payload cannot drive a terminal")
    func cleaned() throws {
        let routed = try PushRouter().route(try payload(s: a, title: "hi\u{1B}]0;owned\u{7}"), among: try servers())
        #expect(routed.title == "hi]0;owned")
    }
}
