import Foundation
import HomeportCrypto
import HomeportHTTP
import HomeportStorage
import HomeportTestSupport
import HomeportWire
import Testing

@testable import HomeportGateway
@testable import HomeportServer

/// An FCM registration token of the usual shape.
private func fcmToken(_ number: Int) -> String {
    "g\(number)Xk3:APA91b" + String(repeating: "Pq7-_zK", count: 20)
}

private func apnsToken(_ number: Int) -> String {
    String(format: "%064x", 0x7b00 + number)
}

/// A gateway's FCM service account (sending to `standIn`) and VAPID key (posting to private
/// addresses, where the stand-in listens, when `allowPrivate`).
private func gatewayKeys(_ fcm: FCMStandIn?, allowPrivate: Bool = true) throws -> (
    web: WebPushSettings, fcm: FCMSettings?
) {
    var web = WebPushSettings(keyPEM: try P256Key.generate().privateKeyPEM, subject: "mailto:gateway@example.net")
    web.allowPrivateEndpoints = allowPrivate
    var account: FCMSettings?
    if let fcm {
        account = try FCMSettings.serviceAccount(fromFile: fcm.serviceAccountFile)
        account?.baseURL = fcm.url
    }
    return (web, account)
}

/// A server's push settings that send everything through `gateway` with `credential`.
private func throughGateway(_ gateway: GatewayHarness, credential: String, webPushKey: String) -> PushSettings {
    var settings = PushSettings(topic: APNsStandIn.topic)
    var carried = PushGatewaySettings(
        url: "http://127.0.0.1:\(gateway.replicas[0].port)", credential: credential, webPushKey: webPushKey,
        fcmProject: "homeport-test")
    // The stand-in push service listens on 127.0.0.1.
    carried.allowPrivateWebPushEndpoints = true
    settings.sendThrough(carried)
    return settings
}

/// A push as a server sends it through a gateway, of `provider`, as `instance`.
private func push(_ provider: PushProvider, _ token: String, instance: String) -> [String: Any] {
    [
        "provider": provider.rawValue, "apnsId": UUID().uuidString.lowercased(), "deviceToken": token,
        "environment": "production", "topic": APNsStandIn.topic,
        "payload":
            #"{"aps":{"alert":{"title":"Hi"},"thread-id":"\#(instance):chat"},"homeport":{"c":"homeport/core:test","s":"\#(instance)"}}"#,
        "priority": 10, "expiration": Int64(Date().timeIntervalSince1970) + 3600,
    ]
}

private func webPushRegistration(_ subscription: WebPushStandIn.Subscription) -> [String: Any] {
    [
        "provider": "webpush", "endpoint": subscription.endpoint,
        "keys": ["p256dh": subscription.p256dh, "auth": subscription.auth],
    ]
}

@Suite(
    "The push gateway carries FCM and Web Push too, under the same rules as APNs", .tags(.process, .postgres, .interop))
struct PushGatewayKindsTests {
    @Test(
        "two servers through one gateway: each push arrives once per device with its own server's s; a 410 prunes only where it was pushed",
        arguments: Backend.allCases)
    func threeKinds(backend: Backend) throws {
        let apns = try APNsStandIn()
        let fcm = try FCMStandIn()
        let service = try WebPushStandIn()
        let keys = try gatewayKeys(fcm)
        let gatewayKey = try keys.web.publicKey()
        let gateway = try GatewayHarness(.sqlite, standIn: apns, webPush: keys.web, fcm: keys.fcm)
        // One browser subscription both servers registered; the push service says it is gone at
        // the first push.
        let shared = try service.subscribe()
        try service.answer(shared, with: [410])
        let credentials = [try SecretToken.generate(), try SecretToken.generate()]
        let sharedName = WebPushSubscription.token(endpoint: shared.endpoint)
        try withAccounts(
            backend, push: throughGateway(gateway, credential: credentials[0], webPushKey: gatewayKey),
            clockStart: Date()
        ) { a in
            try withAccounts(
                .sqlite, push: throughGateway(gateway, credential: credentials[1], webPushKey: gatewayKey),
                clockStart: Date()
            ) { b in
                for (index, server) in [a, b].enumerated() {
                    try gateway.enroll("s\(index)", instanceID: server.instanceID, credential: credentials[index])
                    let ada = try server.signIn("ada@example.com")
                    let key = try server.app("GET", HomeportPath.pushWebPushKey, token: ada)
                    #expect(key.jsonObject?["publicKey"] as? String == gatewayKey, "subscribe with the gateway's key")
                    #expect(try server.register(apnsToken(index), token: ada).status == 200)
                    #expect(try server.register(fcm: fcmToken(index), token: ada).status == 200)
                    #expect(try server.register(shared, token: ada).status == 200)
                    try server.drainThroughGateway()
                }
                let names = (0...1).map { FCMRegistration.name(token: fcmToken($0)) }
                #expect(
                    try gateway.devices() == [
                        "s0": [apnsToken(0), names[0], sharedName], "s1": [apnsToken(1), names[1], sharedName],
                    ])
                let stored = try gateway.database.execute(
                    "SELECT endpoint, p256dh FROM gateway_devices WHERE provider = 'webpush'")
                #expect(stored.count == 2 && stored.allSatisfy { $0.string(at: 0) == shared.endpoint })

                try a.pushToAda()
                try a.drainThroughGateway()
                #expect(apns.waitForRequests(1))
                #expect(try eventually { try fcm.messages().delivered.count == 1 })
                let toA = try fcm.messages().delivered
                let instanceA = try a.instanceID
                #expect(toA.first?.token == fcmToken(0) && toA.first?.data["s"] == instanceA)
                #expect(try service.messages().refused.map(\.status) == [410])
                #expect(try a.outboxRows().isEmpty)
                #expect(
                    !(try a.registeredDevices().contains(sharedName)), "the 410 pruned it at the server that pushed")
                #expect(try b.registeredDevices().contains(sharedName), "the other server keeps its own")
                #expect(try gateway.devices()["s0"] == [apnsToken(0), names[0]])
                #expect(try gateway.devices()["s1"] == [apnsToken(1), names[1], sharedName])

                try b.pushToAda()
                try b.drainThroughGateway()
                #expect(try eventually { try fcm.messages().delivered.count == 2 })
                let toB = try #require(try fcm.messages().delivered.last)
                let instanceB = try b.instanceID
                #expect(toB.token == fcmToken(1) && toB.data["s"] == instanceB)
                let delivered = try service.messages().delivered
                #expect(delivered.count == 1, "each push once per device")
                let message = try #require(delivered.first)
                #expect((message.payload["homeport"] as? [String: Any])?["s"] as? String == instanceB)
                #expect(message.key == gatewayKey, "signed with the gateway's VAPID key")
                #expect(message.subject == "mailto:gateway@example.net")
                #expect(try b.outboxRows().isEmpty)
                #expect(apns.requests().count == 2)
            }
        }
    }

    @Test("a server pushes only to its own FCM and Web Push devices, only as itself, and names them right")
    func rules() throws {
        let apns = try APNsStandIn()
        let fcm = try FCMStandIn()
        let service = try WebPushStandIn()
        let keys = try gatewayKeys(fcm)
        let gateway = try GatewayHarness(.sqlite, standIn: apns, webPush: keys.web, fcm: keys.fcm)
        let servers = try gateway.twoServers(a: [], b: [])
        let subscription = try service.subscribe()
        for (credential, registration) in [
            (servers.credentialA, ["provider": "fcm", "token": fcmToken(1)]),
            (servers.credentialB, ["provider": "fcm", "token": fcmToken(2)]),
            (servers.credentialB, webPushRegistration(subscription)),
        ] {
            let answer = try gateway.post(
                PushGatewayPath.devices, credential: credential, json: ["register": [registration], "remove": []])
            #expect(answer.status == 200, "\(answer.text)")
        }
        let mine = FCMRegistration.name(token: fcmToken(1))
        let bFCM = FCMRegistration.name(token: fcmToken(2))
        let bWeb = WebPushSubscription.token(endpoint: subscription.endpoint)
        let answer = try gateway.push(
            [
                push(.fcm, bFCM, instance: servers.a), push(.webpush, bWeb, instance: servers.a),
                push(.fcm, mine, instance: servers.b), push(.webpush, apnsToken(1), instance: servers.a),
                push(.fcm, bWeb, instance: servers.a), push(.apns, mine, instance: servers.a),
                push(.fcm, mine, instance: servers.a),
            ], credential: servers.credentialA)
        #expect(answer.status == 200)
        let outcomes = answer.results.map { "\($0["status"] as? Int ?? -1) \($0["reason"] as? String ?? "")" }
        #expect(
            outcomes == [
                "403 UnknownDevice", "403 UnknownDevice", "403 SenderMismatch", "400 BadDeviceToken",
                "400 BadDeviceToken", "400 BadDeviceToken", "200 ",
            ])
        #expect(try eventually { try fcm.messages().delivered.count == 1 })
        #expect(try fcm.messages().delivered.map(\.token) == [fcmToken(1)], "only a's own device got a push")
        #expect(try service.messages().delivered.isEmpty)

        // Registrations are checked as the server checks them; a refused one is named by its
        // field, and the others in the same request are recorded.
        for (registration, field) in [
            (["provider": "fcm", "token": "has spaces in it, not a token"], "register[0].token"),
            (
                [
                    "provider": "webpush", "endpoint": "ftp://push.example.net/x",
                    "keys": ["p256dh": "AA", "auth": "AA"],
                ],
                "register[0].endpoint"
            ),
            (
                [
                    "provider": "webpush", "endpoint": "https://push.example.net/x",
                    "keys": ["p256dh": "AAAA", "auth": subscription.auth],
                ], "register[0].keys.p256dh"
            ),
        ] as [([String: Any], String)] {
            let answer = try gateway.post(
                PushGatewayPath.devices, credential: servers.credentialA,
                json: [
                    "register": [registration, ["token": apnsToken(9), "environment": "production"]], "remove": [],
                ])
            #expect(answer.status == 200 && Self.refused(answer) == [field], "\(answer.text)")
            #expect(answer.jsonObject?["registered"] as? Int == 1)
        }
        let badRemoval = try gateway.post(
            PushGatewayPath.devices, credential: servers.credentialA,
            json: ["register": [], "remove": ["fcm:xyz", apnsToken(9)]])
        #expect(Self.refused(badRemoval) == ["remove[0]"] && badRemoval.jsonObject?["removed"] as? Int == 1)
        #expect(try gateway.devices()["a"] == [mine], "only what was refused is missing")
    }

    /// The fields of the changes a devices answer refused.
    static func refused(_ answer: RawResponse) -> [String] {
        (answer.jsonObject?["refused"] as? [[String: Any]] ?? []).compactMap { $0["field"] as? String }
    }

    @Test(
        "a gateway without FCM keeps no FCM device and refuses its pushes; one on the internet posts to no private address"
    )
    func whatTheGatewayDoesNotCarry() throws {
        let apns = try APNsStandIn()
        let service = try WebPushStandIn()
        let keys = try gatewayKeys(nil, allowPrivate: false)
        let gateway = try GatewayHarness(.sqlite, standIn: apns, webPush: keys.web)
        let servers = try gateway.twoServers(a: [], b: [])
        let subscription = try service.subscribe()
        let answer = try gateway.post(
            PushGatewayPath.devices, credential: servers.credentialA,
            json: [
                "register": [["provider": "fcm", "token": fcmToken(3)], webPushRegistration(subscription)],
                "remove": [],
            ])
        #expect(answer.status == 200, "\(answer.text)")
        #expect(answer.jsonObject?["ignored"] as? Int == 1 && answer.jsonObject?["registered"] as? Int == 1)
        #expect(try gateway.devices()["a"] == [WebPushSubscription.token(endpoint: subscription.endpoint)])
        let pushed = try gateway.push(
            [
                push(.fcm, FCMRegistration.name(token: fcmToken(3)), instance: servers.a),
                push(.webpush, WebPushSubscription.token(endpoint: subscription.endpoint), instance: servers.a),
            ], credential: servers.credentialA)
        #expect(pushed.results.first?["status"] as? Int == 400)
        #expect(pushed.results.first?["reason"] as? String == PushGatewayReason.providerUnavailable)
        #expect(pushed.results.last?["status"] as? Int == 400, "a gateway on the internet does not post to 127.0.0.1")
        #expect(try service.messages().delivered.isEmpty && (try service.messages().refused.isEmpty))
        #expect(
            !gateway.log.lines.joined().contains(subscription.endpoint)
                && !gateway.log.lines.joined().contains(fcmToken(3)))
    }

    @Test("a device the gateway refuses is said in the log and let go: the server's other devices go on getting pushes")
    func refusedRegistrationHoldsNothing() throws {
        let apns = try APNsStandIn()
        let keys = try gatewayKeys(nil)
        let gateway = try GatewayHarness(.sqlite, standIn: apns, webPush: keys.web)
        let credential = try SecretToken.generate()
        let gatewayKey = try keys.web.publicKey()
        try withAccounts(
            .sqlite, push: throughGateway(gateway, credential: credential, webPushKey: gatewayKey), clockStart: Date()
        ) { server in
            try gateway.enroll("home", instanceID: server.instanceID, credential: credential)
            let ada = try server.signIn("ada@example.com")
            // A subscription an older build took, which today's rules refuse (plain http to a
            // public host): the gateway refuses it too.
            let endpoint = "http://push.example.net/old"
            let receiver = IdentityProof.base64URL(try P256Key.generate().publicKey)
            try server.application.database.execute(
                """
                INSERT INTO push_devices (token, environment, topic, user_id, session_key_hash, created_at, updated_at,
                    provider, endpoint, p256dh, auth)
                SELECT $1, 'production', $2, id, NULL, 0, 0, 'webpush', $3, $4, $5 FROM users
                """,
                [
                    .text(WebPushSubscription.token(endpoint: endpoint)), .text(APNsStandIn.topic), .text(endpoint),
                    .text(receiver), .text(IdentityProof.base64URL([UInt8](repeating: 7, count: 16))),
                ])
            #expect(try server.register(apnsToken(5), token: ada).status == 200)
            try server.pushToAda()
            try server.drainThroughGateway()
            #expect(apns.waitForRequests(1), "the APNs device got its push")
            #expect(try gateway.devices()["home"] == [apnsToken(5)])
            #expect(server.log.lines.contains { $0.contains("the push gateway refused device registrations") })
            #expect(!server.log.lines.joined().contains(endpoint), "the endpoint is not logged")
        }
    }

    @Test("a forward of device changes fits the gateway's body: 4 KiB FCM tokens go in several requests")
    func forwardsFit() {
        let changes = (0..<2000).map { index in
            PushGatewaySync.Change(
                token: "fcm:" + String(repeating: "0", count: 64), environment: .production, registered: true,
                version: Int64(index), endpoint: String(repeating: "x", count: 4096))
        }
        let first = PushGatewayClient.fitting(changes)
        #expect((900..<1100).contains(first.count), "\(first.count)")
        let body = try? JSONEncoder().encode(
            GatewayDeviceChanges(register: first.compactMap(\.registration), remove: []))
        #expect((body?.count ?? .max) < 8 << 20)
        #expect(PushGatewayClient.fitting(Array(changes.prefix(3))).count == 3)
    }

    @Test("a server whose flags name another VAPID key or Firebase project than its gateway's says so in its log")
    func flagsChecked() throws {
        let apns = try APNsStandIn()
        let fcm = try FCMStandIn()
        let keys = try gatewayKeys(fcm)
        let gateway = try GatewayHarness(.sqlite, standIn: apns, webPush: keys.web, fcm: keys.fcm)
        let warning = "the push gateway does not carry what this server was told"
        for right in [true, false] {
            let credential = try SecretToken.generate()
            var settings = throughGateway(
                gateway, credential: credential,
                webPushKey: right ? try keys.web.publicKey() : IdentityProof.base64URL(try P256Key.generate().publicKey)
            )
            if !right { settings.gateway?.fcmProject = "another-project" }
            if let carried = settings.gateway { settings.sendThrough(carried) }
            try withAccounts(.sqlite, push: settings, clockStart: Date()) { server in
                try gateway.enroll(right ? "right" : "wrong", instanceID: server.instanceID, credential: credential)
                _ = try server.application.sender?.drainOnce()
                let said = server.log.lines.filter { $0.contains(warning) }
                if right {
                    #expect(said.isEmpty, "\(said)")
                } else {
                    #expect(said.count == 2, "\(said)")
                    #expect(said.contains { $0.contains("--push-gateway-webpush-key") })
                    #expect(said.contains { $0.contains("its Firebase project is homeport-test") })
                }
            }
        }
    }

    @Test("a kind the server sends through the gateway, which the gateway does not send, is named")
    func kindNamed() {
        let settings = PushGatewaySettings(url: "https://gw.example.net", credential: "x", fcmProject: "books-app")
        #expect(
            PushGatewayClient.mismatches(
                GatewayServices(providers: [.apns]), settings: settings, providers: [.apns, .fcm])
                == ["it does not send fcm: those pushes are refused"])
        #expect(
            PushGatewayClient.mismatches(
                GatewayServices(providers: [.apns, .fcm], fcmProject: "books-app"), settings: settings,
                providers: [.apns, .fcm]
            ).isEmpty)
    }
}
