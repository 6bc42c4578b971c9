import Foundation
import HomeportAPNs
import HomeportCrypto
import HomeportHTTP
import HomeportLogging
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportGateway
@testable import HomeportServer

#if canImport(Glibc)
    import Glibc
#endif

private func device(_ number: Int) -> String {
    String(format: "%064x", 0x9a00 + number)
}

/// Push gateway replicas on one database, sending to an APNs stand-in.
final class GatewayHarness {
    let standIn: APNsStandIn
    let replicas: [PushGateway]
    let log = MemoryLogSink()
    let url: DatabaseURL
    private let cleanUp: @Sendable () -> Void

    init(
        _ backend: Backend, replicas count: Int = 1, standIn: APNsStandIn, pushesPerMinute: Int = 60_000,
        devicesPerServer: Int = 100_000, batchesPerServer: Int = 4, senders: Int = 6,
        deviceCacheBytes: Int = 48 << 20, apnsURL: String? = nil,
        tls: TestCertificates? = nil, metrics: Bool = false, webPush: WebPushSettings? = nil, fcm: FCMSettings? = nil
    ) throws {
        self.standIn = standIn
        let (url, cleanUp) = try backend.makeDatabaseURL()
        self.url = url
        self.cleanUp = cleanUp
        var http = HTTPServerConfiguration(host: "127.0.0.1", port: 0, workerThreads: 2)
        // As `gateway serve` has them (`--senders`): more than one server's places, so that a
        // server's fourth batch finds a thread to be refused on.
        http.poolThreads = senders
        http.maxBodyBytes = 8 << 20
        if let tls { http.tls = try TLSCredentials(certificateFile: tls.certificateFile, keyFile: tls.keyFile) }
        var apns = try #require(try pushSettings(standIn).apns)
        if let apnsURL {
            apns.client.productionURL = apnsURL
            apns.client.timeoutSeconds = 2
        }
        var started: [PushGateway] = []
        for _ in 0..<count {
            var configuration = PushGatewayConfiguration(
                http: http, database: url, apns: apns, topic: APNsStandIn.topic,
                pushesPerMinute: pushesPerMinute, devicesPerServer: devicesPerServer,
                batchesPerServer: batchesPerServer, deviceCacheBytes: deviceCacheBytes,
                metricsListen: metrics ? ListenAddress(host: "127.0.0.1", port: 0) : nil)
            configuration.webPush = webPush
            configuration.fcm = fcm
            let gateway = try PushGateway(
                configuration: configuration, logger: Logger(label: "test", minimumLevel: .debug, sink: log))
            try gateway.start()
            started.append(gateway)
        }
        replicas = started
    }

    deinit {
        for replica in replicas { replica.shutdown() }
        cleanUp()
    }

    var database: any Database { replicas[0].database }

    /// Enrolls `instanceID` as `name` with `credential` (a new one by default), as `gateway servers
    /// add` does once it has read them from the server's address; returns the credential.
    @discardableResult
    func enroll(_ name: String, instanceID: String, credential: String? = nil) throws -> String {
        let credential = try credential ?? SecretToken.generate()
        let outcome = try GatewayServerStore(database).add(
            name: name, instanceID: instanceID, url: "https://\(name).example.net",
            credentialHash: SecretToken.storedForm(of: credential), now: 0)
        guard case .added = outcome else { throw RawHTTPError("\(name) was not enrolled: \(outcome)") }
        return credential
    }

    /// Enrolls server `a` under a new installation id and registers its devices; its id and
    /// credential.
    func oneServer(_ devices: [String]) throws -> (instance: String, credential: String) {
        let a = UUID().uuidString.lowercased()
        let credential = try enroll("a", instanceID: a)
        try register(devices, credential: credential)
        return (a, credential)
    }

    /// Enrolls servers `a` and `b` under new installation ids and registers each one's devices;
    /// their ids and credentials.
    func twoServers(a devicesA: [String], b devicesB: [String], registeringBOn replicaB: Int = 0) throws -> (
        a: String, credentialA: String, b: String, credentialB: String
    ) {
        let a = UUID().uuidString.lowercased()
        let b = UUID().uuidString.lowercased()
        let credentialA = try enroll("a", instanceID: a)
        let credentialB = try enroll("b", instanceID: b)
        try register(devicesA, credential: credentialA)
        try register(devicesB, credential: credentialB, replica: replicaB)
        return (a, credentialA, b, credentialB)
    }

    /// POSTs `json` to a replica with `credential`.
    func post(
        _ path: String, credential: String?, json: Any, replica: Int = 0, extraHeaders: [(String, String)] = []
    ) throws -> RawResponse {
        var headers = [("Content-Type", "application/json")] + extraHeaders
        if let credential { headers.append(("Authorization", "Bearer \(credential)")) }
        return try RawHTTP.request(
            port: replicas[replica].port, method: "POST", path: path, headers: headers,
            body: try JSONSerialization.data(withJSONObject: json))
    }

    /// POSTs `body` as it is, JSON or not, to a replica with `credential`.
    func post(_ path: String, credential: String, body: String, replica: Int = 0) throws -> RawResponse {
        try RawHTTP.request(
            port: replicas[replica].port, method: "POST", path: path,
            headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(credential)")],
            body: Data(body.utf8))
    }

    /// Registers devices for the credential's server, through the API.
    func register(_ tokens: [String], credential: String, replica: Int = 0) throws {
        let response = try post(
            PushGatewayPath.devices, credential: credential,
            json: ["register": tokens.map { ["token": $0, "environment": "production"] }, "remove": []],
            replica: replica)
        #expect(response.status == 200, "\(String(decoding: response.body, as: UTF8.self))")
    }

    /// Sends pushes as raw JSON; the answer's outcomes.
    func push(
        _ pushes: [[String: Any]], credential: String, replica: Int = 0
    ) throws -> (status: Int, results: [[String: Any]]) {
        let response = try post(
            PushGatewayPath.pushes, credential: credential, json: ["pushes": pushes], replica: replica)
        return (response.status, response.jsonObject?["results"] as? [[String: Any]] ?? [])
    }

    /// The devices each server name registered.
    func devices() throws -> [String: Set<String>] {
        var result: [String: Set<String>] = [:]
        for row in try database.execute(
            "SELECT s.name AS name, d.token AS token FROM gateway_devices d JOIN gateway_servers s ON s.id = d.server_id"
        ) {
            result[row.string("name") ?? "", default: []].insert(row.string("token") ?? "")
        }
        return result
    }
}

/// A push as a server sends it: `s` (and the thread) under `instance`.
private func rawPush(
    _ token: String, instance: String, title: String = "Hello", payload: String? = nil,
    topic: String = APNsStandIn.topic, collapseID: String? = nil
) -> [String: Any] {
    var push: [String: Any] = [
        "apnsId": UUID().uuidString.lowercased(), "deviceToken": token, "environment": "production", "topic": topic,
        "payload": payload
            ?? #"{"aps":{"alert":{"title":"\#(title)"},"thread-id":"\#(instance):chat"},"homeport":{"c":"homeport/core:test","s":"\#(instance)"}}"#,
        "priority": 10, "expiration": 0,
    ]
    if let collapseID { push["collapseId"] = collapseID }
    return push
}

/// Push settings that send through `gateway` (replica `replica`) with `credential`.
private func gatewayPush(_ gateway: GatewayHarness, credential: String, replica: Int = 0, caFile: String? = nil)
    -> PushSettings
{
    var settings = PushSettings(topic: APNsStandIn.topic)
    let scheme = caFile == nil ? "http" : "https"
    settings.gateway = PushGatewaySettings(
        url: "\(scheme)://127.0.0.1:\(gateway.replicas[replica].port)", credential: credential, caFile: caFile)
    return settings
}

extension AccountsHarness {
    /// This installation's id.
    var instanceID: String {
        get throws { try application.identity.instanceID().description }
    }

    /// Runs sender passes until nothing is due, device changes included.
    func drainThroughGateway() throws {
        let sender = try #require(application.sender)
        while try sender.drainOnce() > 0 {}
        try sender.drainOnce()
    }
}

@Suite("The push gateway: servers run by strangers push through one APNs key", .tags(.process, .postgres, .interop))
struct PushGatewayTests {
    @Test("three servers push through two gateway replicas on PostgreSQL: every push once, one provider token for all")
    func threeServers() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.postgres, replicas: 2, standIn: standIn)
        var credentials: [String] = []
        for _ in 0..<3 { credentials.append(try SecretToken.generate()) }
        // A phone that uses two of the servers: its one device token is registered on both.
        let shared = device(99)
        try withAccounts(
            .sqlite, push: gatewayPush(gateway, credential: credentials[0], replica: 0), clockStart: Date()
        ) { a in
            try withAccounts(
                .postgres, push: gatewayPush(gateway, credential: credentials[1], replica: 1), clockStart: Date()
            ) { b in
                try withAccounts(
                    .sqlite, push: gatewayPush(gateway, credential: credentials[2], replica: 0), clockStart: Date()
                ) { c in
                    let servers = [a, b, c]
                    for (index, server) in servers.enumerated() {
                        try gateway.enroll(
                            "server-\(index)", instanceID: server.instanceID, credential: credentials[index])
                    }
                    for (index, server) in servers.enumerated() {
                        let ada = try server.signIn("ada@example.com")
                        for number in 0..<5 { _ = try server.register(device(index * 10 + number), token: ada) }
                        if index < 2 { _ = try server.register(shared, token: ada) }
                    }
                    for server in servers {
                        try server.pushToAda("from a stranger's server")
                        try server.drainThroughGateway()
                    }
                    #expect(standIn.waitForRequests(17))
                    let requests = standIn.requests()
                    #expect(requests.count == 17, "5 + 6 + 6 devices, each push once")
                    #expect(Set(requests.compactMap { $0["apns_id"] as? String }).count == 17)
                    #expect(requests.allSatisfy { $0["status"] as? Int == 200 && $0["invalid"] == nil })
                    #expect(Set(requests.compactMap { $0["jwt"] as? String }).count == 1, "one provider token for all")
                    // Each server's pushes carry its own id, and reach its own devices.
                    for (index, server) in servers.enumerated() {
                        let instance = try server.instanceID
                        let mine = requests.filter {
                            (($0["payload"] as? [String: Any])?["homeport"] as? [String: Any])?["s"] as? String
                                == instance
                        }
                        var expected = Set((0..<5).map { device(index * 10 + $0) })
                        if index < 2 { expected.insert(shared) }
                        #expect(Set(mine.compactMap { $0["device"] as? String }) == expected)
                        #expect(try server.outboxRows().isEmpty, "delivered pushes leave every server's outbox")
                    }
                    let counts = try GatewayServerStore(gateway.database).all().map { ($0.name, $0.delivered) }
                    #expect(counts.map(\.1) == [6, 6, 5], "\(counts)")
                }
            }
        }
    }

    @Test("a gateway whose /metrics address is taken does not start, and leaves no listener open")
    func metricsAddressTaken() throws {
        let standIn = try APNsStandIn()
        let taken = try DeadPort()
        let port = try RawHTTP.freePort()
        let (url, cleanUp) = try Backend.sqlite.makeDatabaseURL()
        defer { cleanUp() }
        let configuration = PushGatewayConfiguration(
            http: HTTPServerConfiguration(host: "127.0.0.1", port: port, workerThreads: 1), database: url,
            apns: try #require(try pushSettings(standIn).apns), topic: APNsStandIn.topic,
            metricsListen: ListenAddress(host: "127.0.0.1", port: taken.port))
        let gateway = try PushGateway(
            configuration: configuration, logger: Logger(label: "test", sink: MemoryLogSink()))
        defer { gateway.shutdown() }
        #expect(throws: (any Error).self) { try gateway.start() }
        #expect(throws: (any Error).self, "the push listener was closed again") {
            try RawHTTP.request(port: port, path: "/healthz")
        }
    }

    @Test("a push whose s or thread is another installation's is refused, also with a key sent twice")
    func spoofedSender() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let (a, credential) = try gateway.oneServer([device(1)])
        let b = UUID().uuidString.lowercased()
        let spoofs: [(String, String)] = [
            ("s of another", #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(b)"}}"#),
            (
                "thread of another",
                #"{"aps":{"alert":{"title":"x"},"thread-id":"\#(b):chat"},"homeport":{"s":"\#(a)"}}"#
            ),
            ("no s", #"{"aps":{"alert":{"title":"x"}},"homeport":{"c":"x"}}"#),
            ("the block twice", #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(a)"},"homeport":{"s":"\#(b)"}}"#),
            ("s twice", #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(a)","s":"\#(b)"}}"#),
            ("s twice, escaped", #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(a)","\u0073":"\#(b)"}}"#),
            ("no app data", #"{"aps":{"alert":{"title":"x"}}}"#),
            (
                "a key planted beside the block",
                #"{"aps":{"alert":{"title":"x"}},"homeport":{"s":"\#(a)"},"homeport.server":"\#(b)"}"#
            ),
            ("not JSON", "<html>"),
        ]
        let answer = try gateway.push(
            spoofs.map { rawPush(device(1), instance: a, payload: $0.1) }, credential: credential)
        #expect(answer.status == 200)
        for ((name, _), result) in zip(spoofs, answer.results) {
            #expect(
                [PushGatewayReason.senderMismatch, PushGatewayReason.badPayload].contains(result["reason"] as? String),
                "\(name): \(result)")
            #expect(result["status"] as? Int != 200, "\(name)")
        }
        // Its own, the same otherwise, goes.
        let own = try gateway.push([rawPush(device(1), instance: a)], credential: credential)
        #expect(own.results.first?["status"] as? Int == 200)
        #expect(standIn.waitForRequests(1))
        #expect(standIn.requests().count == 1, "none of the spoofs reached Apple")
    }

    @Test(
        "a batch the fast reader does not take is read by the API's one decoder: garbage and a key twice in any spelling are 400, a well-formed batch in another layout goes"
    )
    func batchesTheFastReaderLeaves() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let (a, credential) = try gateway.oneServer([device(1)])
        let push = String(
            decoding: try JSONSerialization.data(withJSONObject: rawPush(device(1), instance: a)), as: UTF8.self)
        let refused = [
            "<html><body>502</body></html>",
            #"{"pushes":[\#(push)],"pushes":[]}"#,
            #"{"pushes":[\#(push.dropLast()),"apns\u0049d":"\#(UUID().uuidString.lowercased())"}]}"#,
            #"{"pushes":[\#(push)]} trailing"#,
        ]
        for body in refused {
            let answer = try gateway.post(PushGatewayPath.pushes, credential: credential, body: body)
            #expect(answer.status == 400, "\(body.prefix(60)): \(String(decoding: answer.body, as: UTF8.self))")
        }
        // What JSONDecoder reads and the fast reader leaves: whitespace between every token, a
        // member it does not know (ignored, as by every other route).
        let accepted = [
            " {\n \"pushes\" : [ \(push) ] \n} ",
            #"{"note":"from an older server","pushes":[\#(push)]}"#,
        ]
        for body in accepted {
            let answer = try gateway.post(PushGatewayPath.pushes, credential: credential, body: body)
            #expect(answer.status == 200, "\(body.prefix(60)): \(String(decoding: answer.body, as: UTF8.self))")
            #expect(
                ((answer.jsonObject?["results"] as? [[String: Any]])?.first?["status"] as? Int) == 200,
                "\(String(decoding: answer.body, as: UTF8.self))")
        }
        #expect(standIn.waitForRequests(accepted.count))
        #expect(standIn.requests().count == accepted.count, "no refused batch reached Apple")
    }

    @Test("a server pushes only to devices it registered: another server's device is refused")
    func othersDevices() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.postgres, replicas: 2, standIn: standIn)
        let (a, credentialA, _, _) = try gateway.twoServers(a: [device(1)], b: [device(2)], registeringBOn: 1)
        let answer = try gateway.push(
            [rawPush(device(2), instance: a), rawPush(device(1), instance: a)], credential: credentialA, replica: 1)
        #expect(answer.results.map { $0["status"] as? Int } == [403, 200])
        #expect(answer.results.first?["reason"] as? String == PushGatewayReason.unknownDevice)
        // A removal holds at once, on the other replica too.
        let removed = try gateway.post(
            PushGatewayPath.devices, credential: credentialA, json: ["register": [], "remove": [device(1)]])
        #expect(removed.status == 200)
        let after = try gateway.push([rawPush(device(1), instance: a)], credential: credentialA, replica: 1)
        #expect(after.results.first?["reason"] as? String == PushGatewayReason.unknownDevice)
        #expect(standIn.waitForRequests(1))
        #expect(standIn.requests().compactMap { $0["device"] as? String } == [device(1)])
        // A server cannot remove another's registration either.
        _ = try gateway.post(
            PushGatewayPath.devices, credential: credentialA, json: ["register": [], "remove": [device(2)]])
        #expect(try gateway.devices()["b"] == [device(2)])
    }

    @Test("a revoked server is refused at once on every replica; the others go on")
    func revoked() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.postgres, replicas: 2, standIn: standIn)
        let (a, credentialA, b, credentialB) = try gateway.twoServers(a: [device(1)], b: [device(2)])
        #expect(try gateway.push([rawPush(device(1), instance: a)], credential: credentialA, replica: 1).status == 200)
        #expect(try GatewayServerStore(gateway.database).revoke(name: "a", now: 1))
        for replica in 0..<2 {
            let refused = try gateway.push([rawPush(device(1), instance: a)], credential: credentialA, replica: replica)
            #expect(refused.status == 401, "replica \(replica)")
            let devices = try gateway.post(
                PushGatewayPath.devices, credential: credentialA,
                json: ["register": [["token": device(3), "environment": "production"]], "remove": []], replica: replica)
            #expect(devices.status == 401)
            let other = try gateway.push([rawPush(device(2), instance: b)], credential: credentialB, replica: replica)
            #expect(other.results.first?["status"] as? Int == 200, "replica \(replica)")
        }
        #expect(try gateway.devices()["a"] == nil, "a revoked server's registrations go")
        #expect(standIn.waitForRequests(3))
        #expect(standIn.requests().count == 3)
    }

    @Test("the credential: none, wrong, sent twice or not Bearer is 401; a bad body is 400 naming the field")
    func badRequests() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let a = UUID().uuidString.lowercased()
        let credential = try gateway.enroll("a", instanceID: a)
        let push = ["pushes": [rawPush(device(1), instance: a)]]
        #expect(try gateway.post(PushGatewayPath.pushes, credential: nil, json: push).status == 401)
        #expect(try gateway.post(PushGatewayPath.pushes, credential: credential + "x", json: push).status == 401)
        #expect(
            try gateway.post(
                PushGatewayPath.pushes, credential: credential, json: push,
                extraHeaders: [("Authorization", "Bearer \(credential)")]
            ).status == 401)
        #expect(
            try gateway.post(
                PushGatewayPath.pushes, credential: nil, json: push,
                extraHeaders: [("Authorization", "Basic \(credential)")]
            ).status == 401)
        let empty = try gateway.post(PushGatewayPath.pushes, credential: credential, json: ["pushes": []])
        #expect(empty.status == 400)
        let missing = try gateway.post(
            PushGatewayPath.pushes, credential: credential, json: ["pushes": [["apnsId": "x"]]])
        #expect(missing.status == 400)
        #expect((missing.jsonObject?["error"] as? [String: Any])?["field"] as? String == "pushes[0].deviceToken")
        let badToken = try gateway.post(
            PushGatewayPath.devices, credential: credential,
            json: ["register": [["token": "../etc", "environment": "production"]], "remove": []])
        #expect(badToken.status == 200, "a change stands alone: the request is answered, the change refused")
        let refusals = badToken.jsonObject?["refused"] as? [[String: Any]]
        #expect(refusals?.map { $0["field"] as? String } == ["register[0].token"])
        let wrongTopic = try gateway.push(
            [rawPush(device(1), instance: a, topic: "net.example.other")], credential: credential)
        #expect(wrongTopic.results.first?["reason"] as? String == PushGatewayReason.topicDisallowed)
        #expect(try gateway.devices().isEmpty, "nothing registered by refused requests")
        #expect(standIn.requests().isEmpty)
    }

    @Test(
        "a stranger's batch is refused from its head, before its body is read: 401 to an announced 8 MB with not a byte of it sent"
    )
    func strangerRefusedFromTheHead() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try gateway.enroll("a", instanceID: UUID().uuidString.lowercased())
        // Several strangers in a row: the first reads the live credentials, the next are looked up one by one.
        let strangers = ["x", "y", "z"].map { "Authorization: Bearer \(credential)\($0)\r\n" }
        for authorization in [""] + strangers + ["Authorization: Basic \(credential)\r\n"] {
            let fd = try RawHTTP.connect(port: gateway.replicas[0].port, timeout: 5)
            defer { close(fd) }
            #expect(
                RawHTTP.send(
                    fd,
                    "POST \(PushGatewayPath.pushes) HTTP/1.1\r\nHost: x\r\n\(authorization)Content-Type: application/json\r\nContent-Length: 8000000\r\n\r\n"
                ))
            // Not a byte of the body: the answer comes from the head alone (a read that waited for the
            // body would time out after 5 s).
            let answer = try RawHTTP.readResponse(fd)
            #expect(answer.status == 401, "\(authorization): \(answer.text)")
        }
        // A small one, sent whole, gets the same answer rather than a reset.
        let small = try gateway.post(
            PushGatewayPath.pushes, credential: credential + "x",
            json: ["pushes": [rawPush(device(1), instance: "x", payload: String(repeating: "a", count: 4000))]])
        #expect(small.status == 401)
        // The live credential's head passes: its body is read and answered.
        #expect(try gateway.post(PushGatewayPath.pushes, credential: credential, json: ["pushes": []]).status == 400)
        #expect(standIn.requests().isEmpty)
    }

    @Test(
        "a payload over 4096 bytes is 413 PayloadTooLarge, and a token or identifier APNs would refuse is 400 with Apple's reason, never a 500",
        arguments: Backend.allCases)
    func malformedPushes(backend: Backend) throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(backend, standIn: standIn)
        let (a, credential) = try gateway.oneServer([device(1)])
        let title = String(repeating: "a", count: 5000)
        var badID = rawPush(device(1), instance: a)
        badID["apnsId"] = "not-a-uuid"
        // What a lenient parser could take for a UUID: a sign, a space, a digit too many or a
        // hyphen moved.
        let nearIDs = [
            "+0000000-0000-4000-8000-000000000000", " 0000000-0000-4000-8000-000000000000",
            "00000000-0000-4000-8000-0000000000000", "000000000-000-4000-8000-000000000000",
            "0000000g-0000-4000-8000-000000000000", "00000000000040008000000000000000",
            "0x000000-0000-4000-8000-000000000000",
        ].map { id in
            var push = rawPush(device(1), instance: a)
            push["apnsId"] = id
            return (push, 400, String?.some(PushGatewayReason.badMessageID))
        }
        var upperID = rawPush(device(1), instance: a)
        upperID["apnsId"] = UUID().uuidString.uppercased()
        var badPriority = rawPush(device(1), instance: a)
        badPriority["priority"] = 7
        var badExpiration = rawPush(device(1), instance: a)
        badExpiration["expiration"] = -1
        let cases: [([String: Any], Int, String?)] =
            nearIDs + [
                (rawPush(device(1), instance: a, title: title), 413, PushGatewayReason.payloadTooLarge),
                (rawPush("\u{0}", instance: a), 400, PushGatewayReason.badDeviceToken),
                (
                    rawPush(String(repeating: "0", count: 63) + "\u{0}", instance: a), 400,
                    PushGatewayReason.badDeviceToken
                ),
                (rawPush(device(1).uppercased(), instance: a), 400, PushGatewayReason.badDeviceToken),
                (badID, 400, PushGatewayReason.badMessageID),
                (upperID, 200, nil),
                (
                    rawPush(device(1), instance: a, collapseID: String(repeating: "c", count: 65)), 400,
                    PushGatewayReason.badCollapseID
                ),
                (rawPush(device(1), instance: a, collapseID: "a\u{0}b"), 400, PushGatewayReason.badCollapseID),
                (badPriority, 400, PushGatewayReason.badPriority),
                (badExpiration, 400, PushGatewayReason.badExpirationDate),
            ]
        // Each refused push alone, and beside a good one, which goes out.
        for (push, status, reason) in cases {
            let answer = try gateway.push([push, rawPush(device(1), instance: a)], credential: credential)
            #expect(answer.status == 200, "\(reason)")
            #expect(answer.results.first?["status"] as? Int == status, "\(reason): \(answer.results)")
            #expect(answer.results.first?["reason"] as? String == reason, "\(answer.results)")
            #expect(answer.results.last?["status"] as? Int == 200, "\(reason): the good push beside it went out")
        }
        // The good one beside each, and an upper-case id, which is a UUID too.
        #expect(
            standIn.requests().count == cases.count + cases.filter { $0.1 == 200 }.count,
            "only the good pushes reached Apple")
    }

    @Test(
        "a payload Unicode counts as the one before (==) but written with other bytes is checked, and sent, as its own bytes"
    )
    func sameTextOtherBytes() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let (a, credential) = try gateway.oneServer([device(1)])
        // U+00C5 is two bytes and U+212B (ANGSTROM SIGN) three, and Swift's `==` holds between
        // them: 1,900 of the first fit in 4096 bytes, as many of the second do not.
        let precomposed = String(repeating: "\u{00C5}", count: 1900)
        let angstroms = String(repeating: "\u{212B}", count: 1900)
        #expect(precomposed == angstroms)
        let pushes = [
            rawPush(device(1), instance: a, title: precomposed), rawPush(device(1), instance: a, title: angstroms),
            rawPush(device(1), instance: a, title: "K"), rawPush(device(1), instance: a, title: "\u{212A}"),
        ]
        let answer = try gateway.push(pushes, credential: credential)
        #expect(answer.results.map { $0["status"] as? Int } == [200, 413, 200, 200], "\(answer.results)")
        #expect(answer.results[1]["reason"] as? String == PushGatewayReason.payloadTooLarge)
        #expect(standIn.waitForRequests(3))
        // Each push that went reached Apple as its own bytes (U+212A, KELVIN SIGN, `==` "K" too).
        let titles = Dictionary(
            standIn.requests().compactMap { record -> (String, [UInt8])? in
                guard let id = record["apns_id"] as? String,
                    let title = ((record["payload"] as? [String: Any])?["aps"] as? [String: Any]).flatMap({
                        ($0["alert"] as? [String: Any])?["title"] as? String
                    })
                else { return nil }
                return (id, Array(title.utf8))
            }, uniquingKeysWith: { first, _ in first })
        #expect(titles.count == 3, "the 413 never reached Apple")
        for (push, title) in [(pushes[0], precomposed), (pushes[2], "K"), (pushes[3], "\u{212A}")] {
            #expect(
                titles[push["apnsId"] as? String ?? ""] == Array(title.utf8),
                "title \(title.unicodeScalars.map { String($0.value, radix: 16) }.prefix(1))")
        }
    }

    @Test("each server is held to its own rate, on every replica together")
    func rateLimit() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.postgres, replicas: 2, standIn: standIn, pushesPerMinute: 3)
        let (a, credentialA, b, credentialB) = try gateway.twoServers(a: [device(1)], b: [device(2)])
        let first = try gateway.push(
            [rawPush(device(1), instance: a), rawPush(device(1), instance: a)], credential: credentialA)
        let second = try gateway.push(
            [rawPush(device(1), instance: a), rawPush(device(1), instance: a)], credential: credentialA, replica: 1)
        #expect(first.results.map { $0["status"] as? Int } == [200, 200])
        #expect(second.results.map { $0["status"] as? Int } == [200, 429])
        #expect(second.results.last?["reason"] as? String == PushGatewayReason.tooManyRequests)
        let other = try gateway.push([rawPush(device(2), instance: b)], credential: credentialB, replica: 1)
        #expect(other.results.first?["status"] as? Int == 200, "another server's rate is its own")
    }

    @Test(
        "a server behind a gateway sends its Web Pushes itself: the gateway never hears of a subscription",
        arguments: Backend.allCases)
    func webPushBesideGateway(backend: Backend) throws {
        let standIn = try APNsStandIn()
        let service = try WebPushStandIn()
        let subscription = try service.subscribe()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try SecretToken.generate()
        var settings = gatewayPush(gateway, credential: credential)
        var web = WebPushSettings(keyPEM: try P256Key.generate().privateKeyPEM, subject: "mailto:ops@example.net")
        web.allowPrivateEndpoints = true
        try settings.enableWebPush(web)
        try withAccounts(backend, push: settings, clockStart: Date()) { server in
            try gateway.enroll("s0", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(3), token: ada)
            #expect(try server.register(subscription, token: ada).status == 200)
            try server.drainThroughGateway()
            #expect(try gateway.devices() == ["s0": [device(3)]], "only the APNs token reaches the gateway")
            try server.pushToAda()
            try server.drainThroughGateway()
            #expect(standIn.waitForRequests(1))
            #expect(try eventually { try service.messages().delivered.count == 1 })
            #expect(try server.outboxRows().isEmpty)
            #expect(
                try server.application.database.execute("SELECT token FROM push_gateway_changes").isEmpty,
                "no subscription waits to be forwarded")
        }
    }

    @Test("410 prunes the registration at the server that pushed, and only there", arguments: Backend.allCases)
    func unregisteredPrunesRightServer(backend: Backend) throws {
        let standIn = try APNsStandIn()
        let shared = device(7)
        try standIn.script(tokens: [
            shared: [
                [
                    "status": 410, "reason": "Unregistered",
                    "timestamp": (Int64(Date().timeIntervalSince1970) + 60) * 1000,
                ]
            ]
        ])
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credentials = [try SecretToken.generate(), try SecretToken.generate()]
        try withAccounts(backend, push: gatewayPush(gateway, credential: credentials[0]), clockStart: Date()) { a in
            try withAccounts(.sqlite, push: gatewayPush(gateway, credential: credentials[1]), clockStart: Date()) { b in
                for (index, server) in [a, b].enumerated() {
                    try gateway.enroll("s\(index)", instanceID: server.instanceID, credential: credentials[index])
                    let ada = try server.signIn("ada@example.com")
                    _ = try server.register(shared, token: ada)
                    _ = try server.register(device(index), token: ada)
                    try server.drainThroughGateway()
                }
                #expect(try gateway.devices() == ["s0": [shared, device(0)], "s1": [shared, device(1)]])
                try a.pushToAda()
                try a.drainThroughGateway()
                #expect(try a.registeredDevices() == [device(0)], "Apple's 410 pruned it at the server that pushed")
                #expect(try b.registeredDevices().contains(shared), "the other server keeps its own until it pushes")
                #expect(try gateway.devices()["s0"] == [device(0)])
                #expect(try gateway.devices()["s1"] == [shared, device(1)])
            }
        }
    }

    @Test("Apple's reasons come back through the gateway: one not to retry stops retries, a transient one is retried")
    func reasonsComeBack() throws {
        let standIn = try APNsStandIn()
        try standIn.script(tokens: [
            device(1): [["status": 413, "reason": "PayloadTooLarge"]],
            device(2): [["status": 503, "reason": "ServiceUnavailable"], ["status": 200]],
        ])
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try SecretToken.generate()
        try withAccounts(.sqlite, push: gatewayPush(gateway, credential: credential), clockStart: Date()) { server in
            try gateway.enroll("home", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(1), token: ada)
            _ = try server.register(device(2), token: ada)
            try server.pushToAda()
            try server.drainThroughGateway()
            let rows = try server.outboxRows().map { ($0.string("state"), $0.string("last_error")) }
            #expect(rows.contains { $0.0 == "failed" && $0.1 == "PayloadTooLarge" }, "\(rows)")
            #expect(rows.contains { $0.0 == "pending" && $0.1 == "ServiceUnavailable" }, "\(rows)")
            try server.makeDue()
            try server.drainThroughGateway()
            #expect(try server.outboxRows().map { $0.string("state") } == ["failed"], "the retried one went through")
            #expect(try server.registeredDevices() == [device(1), device(2)], "neither reason removes a device")
        }
    }

    @Test(
        "registrations and removals reach the gateway whatever made them, and a lost one is registered again",
        arguments: Backend.allCases)
    func deviceSync(backend: Backend) throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try SecretToken.generate()
        try withAccounts(backend, push: gatewayPush(gateway, credential: credential), clockStart: Date()) { server in
            try gateway.enroll("home", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            let bob = try server.signIn("bob@example.com")
            for number in 1...3 { _ = try server.register(device(number), token: ada) }
            _ = try server.register(device(4), token: bob)
            try server.drainThroughGateway()
            #expect(try gateway.devices()["home"] == Set((1...4).map(device)))
            // The app removes one; ada signs out (her session's devices go); bob's account is deleted.
            #expect(try server.app("DELETE", "/api/v1/push/devices/\(device(1))", token: ada).status < 300)
            #expect(try server.app("DELETE", "auth/session", token: ada).status == 401)
            #expect(try server.application.accounts.deleteAccount(email: "bob@example.com"))
            #expect(try server.registeredDevices().isEmpty)
            try server.drainThroughGateway()
            #expect(try gateway.devices()["home"] == nil, "every removal reached the gateway")
            // The gateway loses a registration: the server registers it again and the push goes.
            let carol = try server.signIn("carol@example.com")
            _ = try server.register(device(5), token: carol)
            try server.drainThroughGateway()
            try gateway.database.execute("DELETE FROM gateway_devices")
            try server.application.push.notify(
                ProductNotification(code: ServerCatalogue.testCode, title: "Hi"), email: "carol@example.com")
            try server.drainThroughGateway()
            #expect(try server.outboxRows().map { $0.string("state") } == ["pending"])
            #expect(try gateway.devices()["home"] == [device(5)])
            try server.makeDue()
            try server.drainThroughGateway()
            #expect(standIn.waitForRequests(1))
            #expect(standIn.requests().compactMap { $0["device"] as? String } == [device(5)])
            #expect(try server.outboxRows().isEmpty)
        }
    }

    @Test(
        "a server reaches its gateway over HTTPS with a private CA, and refuses one whose certificate it cannot trust")
    func https() throws {
        let standIn = try APNsStandIn()
        let certificates = try TestCertificates()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn, tls: certificates)
        let credential = try SecretToken.generate()
        try withAccounts(
            .sqlite, push: gatewayPush(gateway, credential: credential, caFile: certificates.caFile), clockStart: Date()
        ) { server in
            try gateway.enroll("home", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(1), token: ada)
            try server.pushToAda()
            try server.drainThroughGateway()
            #expect(standIn.waitForRequests(1))
            #expect(try server.outboxRows().isEmpty)
        }
        // Without the CA, the system trust refuses the gateway: nothing is sent, the push waits.
        try withAccounts(
            .sqlite, push: gatewayPush(gateway, credential: credential, caFile: "/dev/null"), clockStart: Date()
        ) { server in
            let ada = try server.signIn("ada@example.com")
            _ = try server.register(device(2), token: ada)
            try server.pushToAda()
            try server.drainThroughGateway()
            #expect(try server.outboxRows().map { $0.string("state") } == ["pending"])
            #expect(try server.outboxRows().first?.string("last_error")?.contains("not reached") == true)
        }
        #expect(standIn.requests().count == 1)
    }

    @Test("the gateway logs no payload text and no whole device token, and counts per server in /metrics")
    func logsAndMetrics() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn, metrics: true)
        let a = UUID().uuidString.lowercased()
        let credential = try gateway.enroll("kitchen", instanceID: a)
        try gateway.register([device(1), device(2)], credential: credential)
        let answer = try gateway.push(
            [
                rawPush(device(1), instance: a, title: "Secret dinner plans"),
                rawPush(device(3), instance: a, title: "Secret dinner plans"),
            ], credential: credential)
        #expect(answer.results.map { $0["status"] as? Int } == [200, 403])
        let lines = gateway.log.lines
        #expect(lines.contains { $0.contains("pushes forwarded") && $0.contains("kitchen") })
        #expect(!lines.contains { $0.contains("Secret dinner") })
        #expect(!lines.contains { $0.contains(device(1)) || $0.contains(device(2)) || $0.contains(device(3)) })
        #expect(!lines.contains { $0.contains(credential) })
        let port = try #require(gateway.replicas[0].metricsPort)
        let metrics = String(decoding: try RawHTTP.request(port: port, path: "/metrics").body, as: UTF8.self)
        #expect(
            metrics.contains(#"homeport_gateway_pushes_total{server="kitchen",outcome="delivered"} 1"#), "\(metrics)")
        #expect(metrics.contains(#"homeport_gateway_pushes_total{server="kitchen",outcome="refused"} 1"#))
        #expect(
            try RawHTTP.request(port: gateway.replicas[0].port, path: "/metrics").status == 404,
            "counters are not on the public listener")
    }

    @Test(
        "repeated keys are found in any spelling; well-formed JSON passes",
        arguments: [
            (#"{"a":1,"b":[1,2,{"a":2}]}"#, true), (#"{"a":1,"a":2}"#, false), (#"{"a":1,"\u0061":2}"#, false),
            (#"{"x":{"s":1,"s":1}}"#, false), (#"[{"a":1},{"a":1}]"#, true), (#"{"a":-0.5e+3,"b":"\"\\"}"#, true),
            (#"{"a":01}"#, false), (#"{"a":1}x"#, false), (#"{"a":"\u00"}"#, false), ("", false),
            (#"{"K":1,"\u212A":2}"#, false), ("{\"K\":1,\"\u{212A}\":2}", false), ("{\"é\":1,\"e\u{301}\":2}", false),
            (#"{"a":"\u+061"}"#, false), (#"{"\ud800":1,"\udbff":2}"#, false),
            // A key without an escape is read as it stands, one with an escape decoded: the two
            // readings meet. A value is checked, never decoded.
            (#"{"é":1,"\u00e9":2}"#, false), (#"{"a\"b":1,"a\"b":2}"#, false), (#"{"a\"b":1,"a\\b":2}"#, true),
            (#"{"a":"\u00E9\n\"x\"","b":"\u00e9"}"#, true), ("{\"a\":\"x\ny\"}", false), ("{\"a\tb\":1}", false),
            (#"{"a":"\x"}"#, false), (#"{"a":"\u00g9"}"#, false), (#"{"a":"abc"#, false), (#"{"a":"abc\"#, false),
        ])
    func strictJSON(text: String, valid: Bool) {
        #expect(StrictJSON.isValidWithoutRepeatedKeys(Array(text.utf8)) == valid)
    }

    @Test("keys that are not UTF-8 read as U+FFFD each, so two such keys are one key twice")
    func strictJSONBytes() {
        let twice: [UInt8] = Array(#"{""#.utf8) + [0xFF] + Array(#"":1,""#.utf8) + [0xFE] + Array(#"":2}"#.utf8)
        #expect(!StrictJSON.isValidWithoutRepeatedKeys(twice))
        let once: [UInt8] = Array(#"{""#.utf8) + [0xFF] + Array(#"":1,"a":"#.utf8) + [0x22, 0xFE, 0x22, 0x7D]
        #expect(StrictJSON.isValidWithoutRepeatedKeys(once), "a value's bytes are not compared with anything")
    }

    @Test("a collapse id is namespaced by the sender: one server's never replaces another's")
    func collapseIDs() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let (a, credentialA, b, credentialB) = try gateway.twoServers(a: [device(1)], b: [device(1)])
        _ = try gateway.push([rawPush(device(1), instance: a, collapseID: "chat:42")], credential: credentialA)
        _ = try gateway.push([rawPush(device(1), instance: b, collapseID: "chat:42")], credential: credentialB)
        #expect(standIn.waitForRequests(2))
        let ids = standIn.requests().compactMap { $0["collapse_id"] as? String }
        #expect(ids.count == 2 && Set(ids).count == 2, "\(ids)")
        #expect(
            ids.allSatisfy { $0.count == 64 && !$0.contains("chat") }, "within Apple's 64 bytes, and the server's own")
    }

    @Test("one server holds at most its share of the sending threads: a second batch in flight is 429, others go on")
    func batchesInFlight() throws {
        let standIn = try APNsStandIn()
        // Apple that never answers: a batch stays in flight until the client's deadline.
        let silentApple = try RecordingListener(behaviour: .blackhole)
        let gateway = try GatewayHarness(
            .sqlite, standIn: standIn, batchesPerServer: 1, apnsURL: "https://127.0.0.1:\(silentApple.port)")
        let (a, credentialA, b, credentialB) = try gateway.twoServers(a: [device(1)], b: [device(2)])
        let first = LockedBox<(status: Int, results: [[String: Any]])?>(nil)
        let port = gateway.replicas[0].port
        let thread = Thread {
            let response = try? RawHTTP.request(
                port: port, method: "POST", path: PushGatewayPath.pushes,
                headers: [("Content-Type", "application/json"), ("Authorization", "Bearer \(credentialA)")],
                body: try? JSONSerialization.data(withJSONObject: ["pushes": [rawPush(device(1), instance: a)]]))
            first.value = response.map { ($0.status, $0.jsonObject?["results"] as? [[String: Any]] ?? []) }
        }
        thread.start()
        // The barrier: a's batch is counted in flight (it waits on Apple) before the second is sent.
        let inFlight = gateway.replicas[0].inFlight
        let id = try #require(
            try GatewayServerStore(gateway.database).live(credentialHash: SecretToken.storedForm(of: credentialA))
        ).id
        eventually(timeout: .seconds(2), every: .milliseconds(5)) {
            // Full when a's batch holds the place: this probe's own entry is given back.
            guard inFlight.enter(id) else { return true }
            inFlight.leave(id)
            return false
        }
        let second = try gateway.post(
            PushGatewayPath.pushes, credential: credentialA, json: ["pushes": [rawPush(device(1), instance: a)]])
        #expect(second.status == 429)
        #expect(second.header("Retry-After") == "1")
        let other = try gateway.push([rawPush(device(2), instance: b)], credential: credentialB)
        #expect(other.status == 200, "another server is not held up by a's batches")
        #expect(other.results.first?["status"] as? Int == 0, "Apple did not answer it either")
        eventually(timeout: .seconds(5), every: .milliseconds(10)) { first.value != nil }
        #expect(first.value?.results.first?["status"] as? Int == 0)
    }

    @Test(
        "a server holds at most its cap of devices: past it, a new device's registration is refused by its field, while removals, updates and pushes to the devices it holds go on"
    )
    func deviceCap() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.postgres, standIn: standIn, devicesPerServer: 2)
        let instance = UUID().uuidString.lowercased()
        let credential = try gateway.enroll("a", instanceID: instance)
        try gateway.register([device(1), device(2)], credential: credential)
        let over = try gateway.post(
            PushGatewayPath.devices, credential: credential,
            json: [
                "register": [
                    ["token": device(3), "environment": "production"],
                    ["token": device(4), "environment": "production"],
                    ["token": device(2), "environment": "sandbox"],
                ],
                "remove": [device(1)],
            ])
        #expect(over.status == 200, "\(over.text)")
        let answer = try JSONDecoder().decode(GatewayDeviceResults.self, from: Data(over.text.utf8))
        #expect(answer.refused.map(\.field) == ["register[1]"], "\(over.text)")
        #expect(answer.registered == 2 && answer.removed == 1)
        #expect(try gateway.devices()["a"] == [device(2), device(3)], "one out, one in, the update kept, one refused")
        let full = try gateway.post(
            PushGatewayPath.devices, credential: credential,
            json: ["register": [["token": device(5), "environment": "production"]], "remove": []])
        #expect(full.status == 200 && full.text.contains("register[0]"), "\(full.text)")
        #expect(try gateway.devices()["a"] == [device(2), device(3)])
        // What the gateway holds of the server in memory is what it recorded: the removed and the
        // refused are refused.
        for (token, status) in [(device(1), 403), (device(3), 200), (device(4), 403), (device(5), 403)] {
            let answer = try gateway.push([rawPush(token, instance: instance)], credential: credential)
            #expect(answer.results.first?["status"] as? Int == status, "\(token)")
        }
    }

    @Test("a server's device changes go one at a time: a second at once is 429, another server's are not held up")
    func changesOneAtATime() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let a = try gateway.enroll("a", instanceID: UUID().uuidString.lowercased())
        let b = try gateway.enroll("b", instanceID: UUID().uuidString.lowercased())
        let id = try #require(
            try GatewayServerStore(gateway.database).live(credentialHash: SecretToken.storedForm(of: a))
        ).id
        let changes = gateway.replicas[0].changesInFlight
        // A change of a's, held in flight (as a slow one would be).
        #expect(changes.enter(id))
        let body: [String: Any] = ["register": [["token": device(1), "environment": "production"]], "remove": []]
        let second = try gateway.post(PushGatewayPath.devices, credential: a, json: body)
        #expect(second.status == 429 && second.header("Retry-After") == "1", "\(second.text)")
        #expect(try gateway.post(PushGatewayPath.devices, credential: b, json: body).status == 200)
        changes.leave(id)
        #expect(try gateway.post(PushGatewayPath.devices, credential: a, json: body).status == 200)
    }

    @Test(
        "a credential is enrolled once, revoked ones too: the real server, refused after another address published its digest first, enrols with a new credential"
    )
    func credentialEnrolledOnce() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let store = GatewayServerStore(gateway.database)
        let stolen = SecretToken.storedForm(of: "the real server's credential, whose digest is public")
        guard
            case .added(let squatter) = try store.add(
                name: "squatter", instanceID: UUID().uuidString.lowercased(), url: "https://evil.example.net",
                credentialHash: stolen, now: 1)
        else { throw RawHTTPError("the squatter was not enrolled") }
        let real = UUID().uuidString.lowercased()
        let refused = try store.add(
            name: "real", instanceID: real, url: "https://books.example.net", credentialHash: stolen, now: 2)
        guard case .credentialTaken = refused else {
            Issue.record("the same credential enrolled twice: \(refused)")
            return
        }
        #expect(try store.revoke(name: squatter.name, now: 3))
        guard
            case .credentialTaken = try store.add(
                name: "real", instanceID: real, url: "https://books.example.net", credentialHash: stolen, now: 4)
        else {
            Issue.record("a revoked credential came back")
            return
        }
        guard
            case .added = try store.add(
                name: "real", instanceID: real, url: "https://books.example.net",
                credentialHash: SecretToken.storedForm(of: "a new credential"), now: 5)
        else {
            Issue.record("a new credential was not enrolled")
            return
        }
    }

    @Test("an installation is enrolled once: a second claimant of its id is refused until the first is revoked")
    func oneEnrolmentPerInstallation() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.postgres, standIn: standIn)
        let instance = UUID().uuidString.lowercased()
        try gateway.enroll("real", instanceID: instance)
        let store = GatewayServerStore(gateway.database)
        let second = try store.add(
            name: "claimant", instanceID: instance, url: "https://evil.example.net", credentialHash: "ab", now: 1)
        guard case .instanceTaken(let holder) = second else {
            Issue.record("a second enrolment of one installation: \(second)")
            return
        }
        #expect(holder.name == "real")
        // Also when the check is raced: the index refuses the second row.
        #expect(throws: (any Error).self) {
            try gateway.database.execute(
                """
                INSERT INTO gateway_servers (name, instance_id, url, credential_hash, created_at)
                VALUES ('raced', $1, 'https://x', 'cd', 0)
                """, [.text(instance)])
        }
        #expect(try store.revoke(name: "real", now: 2))
        guard
            case .added = try store.add(
                name: "claimant", instanceID: instance, url: "https://new.example.net", credentialHash: "ab", now: 3)
        else {
            Issue.record("once revoked, the installation may be enrolled again")
            return
        }
    }

    @Test(
        "device changes are forwarded by one replica at a time: a lease another replica cannot take until it ends",
        arguments: Backend.allCases)
    func forwardingLease(backend: Backend) throws {
        try withAccounts(backend) { server throws in
            let sync = PushGatewaySync(server.application.database)
            #expect(try sync.claimForwarding("x", now: 1000, lease: 90))
            #expect(try !sync.claimForwarding("y", now: 1000, lease: 90))
            #expect(try sync.claimForwarding("x", now: 1050, lease: 90), "the holder renews")
            #expect(try !sync.claimForwarding("y", now: 1139, lease: 90))
            #expect(try sync.claimForwarding("y", now: 1141, lease: 90), "an expired lease passes on")
            #expect(try !sync.claimForwarding("x", now: 1142, lease: 90))
        }
    }

    @Test("a server with a gateway publishes its installation id and its credential's digest, never the credential")
    func enrolmentRoute() throws {
        let standIn = try APNsStandIn()
        let gateway = try GatewayHarness(.sqlite, standIn: standIn)
        let credential = try SecretToken.generate()
        try withAccounts(.sqlite, push: gatewayPush(gateway, credential: credential)) { server in
            let answer = try RawHTTP.request(port: server.port, path: PushGatewayPath.enrollment)
            #expect(answer.status == 200)
            #expect(answer.header("Cache-Control") == "no-store")
            #expect(answer.jsonObject?["instanceId"] as? String == (try server.instanceID))
            #expect(answer.jsonObject?["credentialSha256"] as? String == SecretToken.storedForm(of: credential))
            #expect(!String(decoding: answer.body, as: UTF8.self).contains(credential))
        }
        try withAccounts(.sqlite) { server throws in
            #expect(try RawHTTP.request(port: server.port, path: PushGatewayPath.enrollment).status == 404)
        }
    }

    @Test("one server's batches never hold every thread that sends to Apple: at most four, and two left to others")
    func batchesLeaveTwoThreads() throws {
        let standIn = try APNsStandIn()
        for (senders, limit) in [(6, 4), (8, 4), (5, 3), (4, 2), (2, 1)] {
            let gateway = try GatewayHarness(.sqlite, standIn: standIn, senders: senders)
            #expect(gateway.replicas[0].inFlight.limit == limit, "\(senders) senders")
        }
    }

    @Test("GatewayInFlight counts per server and frees a slot when a batch ends")
    func inFlightCounts() {
        let counts = GatewayInFlight(limit: 2)
        #expect(counts.enter(1) && counts.enter(1))
        #expect(!counts.enter(1))
        #expect(counts.enter(2))
        counts.leave(1)
        #expect(counts.enter(1))
    }
}
