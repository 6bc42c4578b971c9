// A push payload as the client receives it (PushPayload, and PushRouter naming the server it came
// from), and the notification answers the client reads next to it. See fuzz/README.md.
import Foundation
import HomeportWire

/// One input: the bytes are a notification's payload (or an answer's body).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let payload = Data(bytes: data, count: size)
    checkPayloadRoundTrip(payload, appDataKey: PushPayload.defaultAppDataKey)
    checkPayloadRoundTrip(payload, appDataKey: "bookorbit")
    for enrolled in enrolments {
        checkRouting(payload, among: enrolled, router: PushRouter())
        checkRouting(payload, among: enrolled, router: PushRouter(appDataKey: "bookorbit", deepLinkScheme: "bookorbit"))
    }
    roundTrip(NotificationCatalogue.self, payload)
    roundTrip(MutedThreads.self, payload)
    roundTrip(PushDeviceRegistration.self, payload)
    return 0
}

/// The two installations a device is enrolled with, and an older server without an id.
let serverA = record("6f1c2a8e-0b7d-4e3a-9c55-2d1e8f4a7b90", "https://books.example.net")
let serverB = record("b33b602a-be34-42e2-a097-6f318d038ad7", "https://media.example.net")
let olderServer = record(nil, "http://192.168.1.20:8080")

/// The sets of enrolled servers every payload is routed among.
let enrolments = [[serverA, serverB], [serverA], [olderServer], []]

/// An enrolled server.
func record(_ id: String?, _ address: String) -> ServerRecord {
    guard let primary = try? ServerAddress(parsing: address, allowHTTP: true) else {
        fatalError("bad address \(address)")
    }
    return ServerRecord(
        instanceID: id.flatMap(InstanceID.init), product: "homeport", email: "ada@example.com", primary: primary,
        alternatives: [], lastWinner: nil, signedOut: false, signedInPath: "wifi")
}

/// A payload that decodes encodes to bytes that decode to the same payload, and to the same bytes again.
func checkPayloadRoundTrip(_ payload: Data, appDataKey: String) {
    guard let first = try? PushPayload(decoding: payload, appDataKey: appDataKey) else { return }
    guard let encoded = try? first.encoded(appDataKey: appDataKey) else {
        fatalError("a payload does not encode: \(first)")
    }
    guard let second = try? PushPayload(decoding: encoded, appDataKey: appDataKey) else {
        fatalError("a payload does not decode what it encoded: \(String(decoding: encoded, as: UTF8.self))")
    }
    require(second == first, "a payload changed in a round trip: \(first) became \(second)")
    require(
        (try? second.encoded(appDataKey: appDataKey)) == encoded, "a payload encodes differently after a round trip")
}

/// A routed push names a server only as the protocol allows: by its `s`, or as the only server
/// when there is no `s`; its thread is that server's, and its text is clean.
func checkRouting(_ payload: Data, among servers: [ServerRecord], router: PushRouter) {
    let routed: RoutedPush
    do {
        routed = try router.route(payload, among: servers)
    } catch {
        require(error is PushRoutingFailure, "route threw \(error)")
        return
    }
    guard let push = try? PushPayload(decoding: payload, appDataKey: router.appDataKey), let app = push.appData else {
        fatalError("a push was routed that does not decode, or has no app data")
    }
    guard let server = servers.first(where: { $0.key == routed.server }) else {
        fatalError("a push was routed to \(routed.server), which is not enrolled")
    }
    require(routed.instanceID == server.instanceID, "routed to \(routed.server) with another id")
    if let s = app.s {
        require(routed.attribution == .serverID && server.instanceID == s, "s = \(s) routed to \(routed.server)")
    } else {
        require(
            routed.attribution == .onlyServer && servers.count == 1 && server.instanceID == nil,
            "a push without s routed among \(servers.count), to a server with an id")
    }
    require(routed.objectID == app.id, "routed object \(String(describing: routed.objectID)) is not the payload's id")
    require((routed.thread == nil) == (push.aps.threadID == nil), "a thread appeared or vanished")
    if let thread = routed.thread, let threadID = push.aps.threadID {
        require(ThreadName.isValid(thread), "routed thread \(thread.debugDescription) is not a thread name")
        require(routed.threadID == "\(routed.server):\(thread)", "thread id \(String(describing: routed.threadID))")
        if let namespace = ThreadName.namespace(of: threadID) {
            require(namespace == server.instanceID, "a thread of \(namespace) routed to \(routed.server)")
        }
    }
    if let link = routed.deepLink {
        require(link.scheme == router.deepLinkScheme && link.host == "session" && app.id != nil, "deep link \(link)")
    }
    for text in [routed.code, routed.title, routed.body ?? "", routed.catalogueVersion ?? ""] {
        require(!text.unicodeScalars.contains(where: ServerText.isControl), "routed text \(text.debugDescription)")
    }
}
