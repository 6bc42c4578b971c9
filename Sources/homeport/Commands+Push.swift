import Foundation
import HomeportClient
import HomeportCommandLine
import HomeportWire

extension Commands {
    static let pushActions = ["register", "unregister", "route", "catalogue", "test"]

    static func pushSpec(_ action: String) -> CommandSpec {
        switch action {
        case "register":
            {
                var spec = CommandSpec(
                    name: "homeport push register",
                    summary:
                        "Register this device's push token (or a Web Push subscription) with SERVER, for the account signed in there.",
                    arguments: [
                        serverArgument,
                        .init(
                            "DEVICE_TOKEN",
                            help: "The APNs device token, in hex; with --provider fcm, the FCM registration token."),
                    ],
                    options: [
                        .value(
                            "environment", "ENV", help: "sandbox (development builds) or production.",
                            default: "production"),
                        .value(
                            "provider", "NAME",
                            help:
                                "apns (a device token), fcm (an Android app's registration token), or webpush (a browser's or UnifiedPush distributor's subscription).",
                            default: "apns"),
                        .value("endpoint", "URL", help: "With --provider webpush: the subscription's endpoint."),
                        .value(
                            "p256dh", "KEY", help: "With --provider webpush: the subscription's public key (base64url)."
                        ),
                        .value(
                            "auth", "SECRET", help: "With --provider webpush: its authentication secret (base64url)."),
                        jsonOption, proxyOption, caFileOption,
                    ],
                    discussion: """
                        The token goes only where the session token goes: to an address that answered as the
                        installation on this network. A token registered with SERVER before from this device is
                        withdrawn there. Signing in again registers the token again; logout and remove withdraw it.
                        A Web Push subscription is kept here by the server's name for it (webpush:…), never by its
                        keys; the server must send Web Push (its key: GET /api/v1/push/webpush-key).
                        """)
                spec.optionalArguments = 1
                return spec
            }()
        case "unregister":
            CommandSpec(
                name: "homeport push unregister",
                summary: "Withdraw the push token this device registered with SERVER.",
                arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption])
        case "route":
            CommandSpec(
                name: "homeport push route",
                summary: "Say which enrolled server a push payload came from (nothing is sent anywhere).",
                arguments: [
                    .init(
                        "FILE",
                        help:
                            "The payload's JSON (an APNs payload, a decrypted Web Push, or an FCM message {\"data\": …}); '-' or nothing reads standard input."
                    )
                ],
                options: [
                    .value(
                        "app-data-key", "KEY", help: "The key of the product's block in the payload.",
                        environment: "HOMEPORT_PUSH_KEY", default: PushPayload.defaultAppDataKey),
                    .value(
                        "scheme", "SCHEME", help: "The scheme of deep links (SCHEME://session/ID).",
                        environment: "HOMEPORT_DEEP_LINK_SCHEME", default: "homeport"),
                    jsonOption,
                ],
                discussion: """
                    Prints the server (named by the payload's 's', or the only enrolled server when it has none),
                    the thread id namespaced with that server, the deep link to open on it, and whether the push's
                    catalogue version calls for a resync of that server's catalogue ('homeport push catalogue').
                    Exits 3, naming no server, when the payload names a server that is not enrolled, names none
                    while several are, or cannot be read.
                    """)
        case "catalogue":
            CommandSpec(
                name: "homeport push catalogue",
                summary: "Fetch SERVER's notification catalogue (a 304 keeps the copy kept here) and show it.",
                arguments: [serverArgument],
                options: [
                    .flag("kept", help: "Show the copy kept here without asking the server."), jsonOption, proxyOption,
                    caFileOption,
                ])
        default:
            CommandSpec(
                name: "homeport push test",
                summary: "Ask SERVER to send one notification to this account's registered devices.",
                arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption])
        }
    }

    static func push(_ action: String, _ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard pushActions.contains(action) else {
            throw UsageError("unknown push action '\(action)'; use \(pushActions.joined(separator: ", "))")
        }
        if action == "route" { return try route(arguments, environment) }
        guard let parsed = try parse(pushSpec(action), arguments) else { return 0 }
        let events = Events()
        let client = try client(environment, parsed, events: events)
        let record = try client.directory.find(parsed.positionals[0])
        let json = parsed.flag("json")
        switch action {
        case "register" where (parsed.options["provider"] ?? "apns") == PushProvider.webpush.rawValue:
            guard parsed.positionals.count == 1 else {
                throw UsageError("--provider webpush takes --endpoint, --p256dh and --auth, not a DEVICE_TOKEN")
            }
            guard let endpoint = parsed.options["endpoint"], let p256dh = parsed.options["p256dh"],
                let auth = parsed.options["auth"]
            else { throw UsageError("--provider webpush needs --endpoint, --p256dh and --auth") }
            let registration = try await client.registerWebPush(
                endpoint: endpoint, keys: WebPushKeys(p256dh: p256dh, auth: auth), with: record.key)
            if json {
                try printJSON([
                    "server": record.key, "registered": true, "provider": "webpush", "token": registration.token,
                ])
            } else {
                say("registered Web Push subscription \(registration.token.prefix(16))… with \(record.displayName)")
            }
        case "register" where parsed.options["provider"] == PushProvider.fcm.rawValue:
            guard parsed.positionals.count == 2 else {
                throw UsageError("push register --provider fcm needs SERVER and the FCM registration token")
            }
            let registration = try await client.registerFCM(token: parsed.positionals[1], with: record.key)
            if json {
                try printJSON([
                    "server": record.key, "registered": true, "provider": "fcm", "token": registration.token,
                ])
            } else {
                say("registered FCM token \(registration.token.prefix(12))… with \(record.displayName)")
            }
        case "register":
            guard (parsed.options["provider"] ?? "apns") == PushProvider.apns.rawValue else {
                throw UsageError("--provider is apns, fcm or webpush, not '\(parsed.options["provider"] ?? "")'")
            }
            guard parsed.positionals.count == 2 else { throw UsageError("push register needs SERVER DEVICE_TOKEN") }
            let text = parsed.options["environment"] ?? PushEnvironment.production.rawValue
            guard let environment = PushEnvironment(rawValue: text) else {
                throw UsageError("--environment is sandbox or production, not '\(text)'")
            }
            let registration = try await client.registerDevice(
                token: parsed.positionals[1], environment: environment, with: record.key)
            if json {
                try printJSON([
                    "server": record.key, "registered": true, "token": registration.token,
                    "environment": registration.environment.rawValue,
                ])
            } else {
                say(
                    "registered device token \(registration.token.prefix(8))… (\(registration.environment.rawValue)) "
                        + "with \(record.displayName)")
            }
        case "unregister":
            let withdrawn = try await client.unregisterDevice(from: record.key)
            if json {
                try printJSON([
                    "server": record.key, "unregistered": withdrawn != nil,
                    "token": withdrawn.map { $0.token as Any } ?? NSNull(),
                ])
            } else if let withdrawn {
                say("withdrew device token \(withdrawn.token.prefix(8))… from \(record.displayName)")
            } else {
                say("this device registered no push token with \(record.displayName); nothing to withdraw")
            }
        case "catalogue":
            let catalogue =
                parsed.flag("kept") ? try client.keptCatalogue(record.key) : try await client.syncCatalogue(record.key)
            guard let catalogue else {
                if json {
                    try printJSON(["server": record.key, "catalogue": NSNull()])
                } else {
                    say("no catalogue of \(record.displayName) is kept here yet: homeport push catalogue \(record.key)")
                }
                return 0
            }
            if json {
                try printJSON([
                    "server": record.key, "version": catalogue.version,
                    "codes": catalogue.codes.map { ["code": $0.code, "title": $0.title] },
                ])
            } else {
                say("catalogue of \(record.displayName), version \(catalogue.version)")
                for code in catalogue.codes { say("  \(code.code)  \(code.title)") }
            }
        default:
            let queued = try await client.sendTestPush(record.key)
            if json {
                try printJSON(["server": record.key, "queued": queued])
            } else {
                say("\(record.displayName) queued a test notification for \(queued) device\(queued == 1 ? "" : "s")")
            }
        }
        return 0
    }

    /// `homeport push route [FILE|-]`: the file is optional.
    static func route(_ arguments: [String], _ environment: [String: String]) throws -> Int32 {
        let spec = pushSpec("route")
        var withoutFile = spec
        withoutFile.arguments = []
        let parsed: ParsedArguments
        do {
            parsed = try spec.parse(arguments)
        } catch let error as UsageError {
            guard let bare = try? withoutFile.parse(arguments) else { throw error }
            parsed = bare
        }
        if parsed.wantsHelp {
            Output.line(spec.help)
            return 0
        }
        let source = parsed.positionals.first ?? "-"
        let payload: Data
        if source == "-" {
            payload = FileHandle.standardInput.readDataToEndOfFile()
        } else {
            guard let data = FileManager.default.contents(atPath: source) else {
                throw UsageError("cannot read \(source)")
            }
            payload = data
        }
        let key = parsed.value("app-data-key", spec: spec, environment: environment) ?? PushPayload.defaultAppDataKey
        let scheme = parsed.value("scheme", spec: spec, environment: environment) ?? "homeport"
        guard !key.isEmpty else { throw UsageError("--app-data-key needs a key") }
        guard PushRouter.isValidScheme(scheme) else {
            throw UsageError("'\(scheme)' is not a URL scheme (a letter, then letters, digits, + - or .)")
        }
        let client = try client(environment) { configuration in
            configuration.pushAppDataKey = key
            configuration.deepLinkScheme = scheme
        }
        let routed: RoutedPush
        do {
            routed = try client.routePush(payload)
        } catch let failure as PushRoutingFailure {
            if parsed.flag("json") { try printJSON(["routed": false, "reason": failure.description]) }
            warn("homeport: not routed: \(failure.description)")
            return 3
        }
        let kept = client.directory.catalogues.catalogue(for: routed.server)?.version
        if parsed.flag("json") {
            var object: [String: Any] = [
                "routed": true, "server": routed.server, "attributedBy": routed.attribution.rawValue,
                "code": routed.code, "resyncDue": routed.resyncDue, "title": routed.title, "silent": routed.isSilent,
            ]
            let optional: [String: Any?] = [
                "threadId": routed.threadID, "thread": routed.thread, "deepLink": routed.deepLink?.absoluteString,
                "codeTitle": routed.codeTitle, "catalogueVersion": routed.catalogueVersion,
                "keptCatalogueVersion": kept, "objectId": routed.objectID, "body": routed.body,
            ]
            for (name, value) in optional { object[name] = value ?? NSNull() }
            try printJSON(object)
            return 0
        }
        let by = routed.attribution == .serverID ? "named by the payload" : "the only server enrolled"
        say("server     \(routed.server)  (\(by))")
        say("thread     \(routed.threadID ?? "none")")
        say("deep link  \(routed.deepLink.map { "\($0.absoluteString)  (open on \(routed.server))" } ?? "none")")
        say("code       \(routed.code)\(routed.codeTitle.map { "  (\($0))" } ?? "")")
        if routed.isSilent {
            say("shown      nothing: a silent push (content-available), to refresh \(routed.server)")
        } else {
            say("shown      \([routed.title, routed.body ?? ""].filter { !$0.isEmpty }.joined(separator: " — "))")
        }
        switch (routed.resyncDue, routed.catalogueVersion) {
        case (true, let version?):
            say(
                "resync     due: the push says catalogue \(version), "
                    + (kept.map { "this device keeps \($0)" } ?? "this device keeps none")
                    + " (homeport push catalogue \(routed.server))")
        default:
            say("resync     not due" + (routed.catalogueVersion.map { " (catalogue \($0))" } ?? ""))
        }
        return 0
    }

    static func muteSpec(_ command: String) -> CommandSpec {
        switch command {
        case "mute":
            CommandSpec(
                name: "homeport mute", summary: "Mute a thread on SERVER: its notifications are not pushed.",
                arguments: [serverArgument, threadArgument], options: [jsonOption, proxyOption, caFileOption])
        case "unmute":
            CommandSpec(
                name: "homeport unmute", summary: "Unmute a thread on SERVER.",
                arguments: [serverArgument, threadArgument], options: [jsonOption, proxyOption, caFileOption])
        default:
            CommandSpec(
                name: "homeport mutes", summary: "List the threads muted on SERVER.",
                arguments: [serverArgument], options: [jsonOption, proxyOption, caFileOption])
        }
    }

    static let threadArgument = CommandSpec.Argument(
        "THREAD",
        help: "The server's thread name (chat:42), or a push's thread id of the same server (<instanceId>:chat:42).")

    static func mute(_ command: String, _ arguments: [String], _ environment: [String: String]) async throws -> Int32 {
        guard let parsed = try parse(muteSpec(command), arguments) else { return 0 }
        let client = try client(environment, parsed)
        let record = try client.directory.find(parsed.positionals[0])
        let json = parsed.flag("json")
        switch command {
        case "mute", "unmute":
            let muted = command == "mute"
            let thread =
                muted
                ? try await client.mute(parsed.positionals[1], on: record.key)
                : try await client.unmute(parsed.positionals[1], on: record.key)
            if json {
                try printJSON(["server": record.key, "thread": thread, "muted": muted])
            } else {
                say("\(muted ? "muted" : "unmuted") \(thread) on \(record.displayName)")
            }
        default:
            let threads = try await client.mutedThreads(record.key)
            if json {
                try printJSON(["server": record.key, "threads": threads])
            } else if threads.isEmpty {
                say("no thread is muted on \(record.displayName)")
            } else {
                threads.forEach { say($0) }
            }
        }
        return 0
    }
}
