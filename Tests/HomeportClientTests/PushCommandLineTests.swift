import Foundation
import HomeportClient
import HomeportTestSupport
import HomeportWire
import Testing

@Suite("The homeport command line: push, mutes, notifications", .tags(.process))
struct PushCommandLineTests {
    let a = InstanceID(UUID())
    let b = InstanceID(UUID())

    /// A state directory enrolling `records`, each signed in with a token in the file vault.
    func home(_ records: [ServerRecord]) throws -> (home: TemporaryDirectory, environment: [String: String]) {
        let home = try TemporaryDirectory()
        let directory = try ServerDirectory(directory: home.path)
        let vault = try FileVault(directory: home.file("vault"))
        for record in records {
            try directory.save(record)
            try vault.store(token: "t0ken", for: record.key)
        }
        return (home, ["HOMEPORT_HOME": home.path, "HOMEPORT_NETWORK_PATH": "home"])
    }

    func json(_ text: String) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
    }

    @Test("help for every new command; bad command lines exit 2")
    func help() throws {
        for arguments in [
            ["push", "register", "--help"], ["push", "unregister", "--help"], ["push", "route", "--help"],
            ["push", "catalogue", "--help"], ["push", "test", "--help"], ["mute", "--help"], ["unmute", "--help"],
            ["mutes", "--help"], ["notifications", "watch", "--help"], ["push", "--help"],
        ] {
            let result = try ServerProcess.runClient(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.output.contains("homeport"), "\(arguments)")
        }
        #expect(try ServerProcess.runClient(["push", "route", "--help"]).output.contains("Exits 3"))
        let (home, environment) = try home([try record(a, primary: "http://127.0.0.1:1")])
        defer { home.remove() }
        for (arguments, message) in [
            (["push"], "push needs an action"), (["push", "fly"], "unknown push action"),
            (["push", "register", a.description, "abcd", "--environment", "staging"], "sandbox or production"),
            (["push", "register", a.description, "not-a-token"], "not a device token"),
            (["push", "route", "-", "--scheme", "no scheme"], "not a URL scheme"),
            (["notifications", "listen", a.description], "unknown notifications action"),
            (["notifications", "watch", a.description, "--count", "0"], "--count"),
            (["mute", a.description], "takes SERVER THREAD"),
            (["mute", a.description, "chat 42"], "not a thread name"),
            (["mute", a.description, "\(b):chat:42"], "another server"),
            (["push", "route", "a", "b"], "takes FILE"),
        ] {
            let result = try ServerProcess.runClient(arguments, environment: environment)
            #expect(result.status == 2, "\(arguments): \(result.error)")
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
        }
    }

    @Test("push route names the server, the thread, the deep link and whether a resync is due; exit 3 when nobody's")
    func route() throws {
        let (home, environment) = try home([
            try record(a, primary: "http://127.0.0.1:1"), try record(b, primary: "http://127.0.0.1:2"),
        ])
        defer { home.remove() }
        let fromB = String(decoding: try PushPeer.payload(b, mv: "m1", id: 7), as: UTF8.self)
        let text = try ServerProcess.runClient(["push", "route"], environment: environment, input: fromB)
        #expect(text.status == 0, "\(text.error)")
        #expect(text.output.contains("server     \(b)  (named by the payload)"))
        #expect(text.output.contains("thread     \(b):chat:7"))
        #expect(text.output.contains("deep link  homeport://session/7  (open on \(b))"))
        #expect(text.output.contains("resync     due"))

        try fromB.write(toFile: home.file("push.json"), atomically: true, encoding: .utf8)
        let file = try ServerProcess.runClient(
            ["push", "route", home.file("push.json"), "--json"], environment: environment)
        let routed = json(file.output)
        #expect(routed?["server"] as? String == b.description)
        #expect(routed?["threadId"] as? String == "\(b):chat:7")
        #expect(routed?["deepLink"] as? String == "homeport://session/7")
        #expect(routed?["resyncDue"] as? Bool == true)
        #expect(routed?["attributedBy"] as? String == "serverID")

        let officer = String(
            decoding: try PushPayload(
                aps: .init(alert: .init(title: "x")), appData: PushAppData(s: a, c: "c", id: 3, mv: nil)
            ).encoded(appDataKey: "officer"), as: UTF8.self)
        let product = try ServerProcess.runClient(
            ["push", "route", "--json"], environment: environment.merging(["HOMEPORT_PUSH_KEY": "officer"]) { $1 },
            input: officer)
        #expect(json(product.output)?["server"] as? String == a.description)
        let custom = try ServerProcess.runClient(
            ["push", "route", "--app-data-key", "officer", "--scheme", "officer-chat", "--json"],
            environment: environment,
            input: officer)
        #expect(json(custom.output)?["deepLink"] as? String == "officer-chat://session/3")

        // An Android app's FCM data message routes the same way (the values are strings there).
        let android =
            #"{"data":{"s":"\#(a)","c":"homeport/core:chat.turn-ended","id":"9","mv":"m1","thread":"\#(a):chat:9"},"#
            + #""notification":{"title":"Your turn"}}"#
        let routedFCM = try ServerProcess.runClient(
            ["push", "route", "--json"], environment: environment, input: android)
        #expect(routedFCM.status == 0, "\(routedFCM.error)")
        #expect(json(routedFCM.output)?["server"] as? String == a.description)
        #expect(json(routedFCM.output)?["threadId"] as? String == "\(a):chat:9")
        #expect(json(routedFCM.output)?["deepLink"] as? String == "homeport://session/9")

        // A silent push, and a string alert: routed by s like the others, and said what they show.
        let silent = try ServerProcess.runClient(
            ["push", "route"], environment: environment,
            input: #"{"aps":{"content-available":1},"homeport":{"s":"\#(b)","c":"homeport/core:sync"}}"#)
        #expect(silent.status == 0, "\(silent.error)")
        #expect(silent.output.contains("server     \(b)  (named by the payload)"))
        #expect(silent.output.contains("shown      nothing: a silent push"))
        let plain = try ServerProcess.runClient(
            ["push", "route", "--json"], environment: environment,
            input: #"{"aps":{"alert":"Your move"},"homeport":{"s":"\#(a)","c":"homeport/core:chat.turn-ended"}}"#)
        #expect(json(plain.output)?["server"] as? String == a.description)
        #expect(json(plain.output)?["body"] as? String == "Your move")
        #expect(json(plain.output)?["silent"] as? Bool == false)

        for (payload, reason) in [
            (String(decoding: try PushPeer.payload(InstanceID(UUID()), mv: "m"), as: UTF8.self), "not enrolled"),
            (String(decoding: try PushPeer.payload(nil, mv: "m"), as: UTF8.self), "2 servers are enrolled"),
            ("garbage", "cannot be read"), (officer, "no 'homeport' block"),
        ] {
            let refused = try ServerProcess.runClient(
                ["push", "route", "--json"], environment: environment, input: payload)
            #expect(refused.status == 3, "\(reason)")
            #expect(refused.error.contains(reason), "\(refused.error)")
            #expect(json(refused.output)?["routed"] as? Bool == false)
            #expect(!refused.output.contains(a.description) && !refused.output.contains(b.description))
        }
    }

    @Test("register, catalogue, mutes, watch and unregister against a scripted server")
    func againstAServer() throws {
        var routes = PushPeer.routes(a, catalogue: PushPeer.catalogue("v1"))
        routes["POST " + HomeportPath.pushTest] = .init(202, Peer.json, #"{"queued":1}"#)
        let peer = try RecordingListener(
            behaviour: .routesAndStreams(
                routes, streamPath: HomeportPath.notificationsStream,
                [
                    [.write(SSE.head), .write(SSE.notification(1, s: a)), .close],
                    [.write(SSE.head), .write(SSE.notification(2, s: a, title: "Second")), .hold],
                    [.write(SSE.notAuthenticated)],
                ]))
        let (home, environment) = try home([try record(a, primary: peer.url)])
        defer { home.remove() }
        let server = String(a.description.prefix(8))

        let register = try ServerProcess.runClient(
            ["push", "register", server, PushPeer.device, "--environment", "sandbox", "--json"],
            environment: environment)
        #expect(register.status == 0, "\(register.error)")
        #expect(json(register.output)?["environment"] as? String == "sandbox")
        #expect(peer.heads("POST " + HomeportPath.pushDevices).count == 1)

        let catalogue = try ServerProcess.runClient(["push", "catalogue", server], environment: environment)
        #expect(catalogue.output.contains("version v1"))
        #expect(catalogue.output.contains("homeport/core:chat.turn-ended  Turn ended"))
        let due = try ServerProcess.runClient(
            ["push", "route", "--json"], environment: environment,
            input: String(decoding: try PushPeer.payload(a, mv: "v1"), as: UTF8.self))
        #expect(json(due.output)?["resyncDue"] as? Bool == false)
        #expect(json(due.output)?["codeTitle"] as? String == "Turn ended")

        #expect(try ServerProcess.runClient(["mute", server, "chat:42"], environment: environment).status == 0)
        #expect(try ServerProcess.runClient(["unmute", server, "\(a):chat:42"], environment: environment).status == 0)
        #expect(try ServerProcess.runClient(["mutes", server], environment: environment).output.contains("chat:42"))
        #expect(
            try ServerProcess.runClient(["push", "test", server], environment: environment).output.contains("1 device"))

        let watch = try ServerProcess.runClient(
            ["notifications", "watch", server, "--json", "--count", "2"], environment: environment)
        #expect(watch.status == 0, "\(watch.error)")
        let lines = watch.output.split(separator: "\n").compactMap { json(String($0)) }
        #expect(lines.map { $0["eventId"] as? Int } == [1, 2])
        #expect((lines.last?["notification"] as? [String: Any])?["title"] as? String == "Second")
        #expect(watch.error.contains("reconnecting"))
        #expect(peer.heads("GET " + HomeportPath.notificationsStream).last?.contains("Last-Event-ID: 1") == true)

        let unregister = try ServerProcess.runClient(["push", "unregister", server], environment: environment)
        #expect(unregister.status == 0)
        #expect(unregister.output.contains("withdrew"))
        #expect(peer.heads("DELETE " + HomeportPath.pushDevice(PushPeer.device)).count == 1)

        // The next connection gets the API's 401: the account is signed out (exit 4).
        let signedOut = try ServerProcess.runClient(["notifications", "watch", server], environment: environment)
        #expect(signedOut.status == 4, "\(signedOut.error)")
    }
}
