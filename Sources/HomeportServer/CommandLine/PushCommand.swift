import Foundation
import HomeportCommandLine
import HomeportLogging
import HomeportStorage

/// `homeport-server push send|devices|vapid-key`
enum PushCommand {
    static let sendSpec = CommandSpec(
        name: "homeport-server push send",
        summary: "Notify one account: the in-app stream shows it, and each of its devices gets a push.",
        options: [
            ServerCLI.databaseOption,
            .value("email", "EMAIL", help: "The account's sign-in address."),
            .value("code", "CODE", help: "A code of the catalogue, such as homeport/core:push.test."),
            .value("title", "TITLE", help: "The banner's title (1–200 characters)."),
            .value("body", "TEXT", help: "The banner's text."),
            .value(
                "thread", "ID", help: "The conversation it belongs to, such as chat:42 (muted threads get no push)."),
            .value("id", "N", help: "The id of the object it is about (the deep link's id)."),
            PushOptions.catalogue, PushOptions.pushKey, PushOptions.topic, PushOptions.devicesPerAccount,
        ],
        discussion: """
            The push is queued in the database; a running 'serve' with an APNs key or a push gateway sends it within a second.
            Options not given take what the last 'serve' on this database recorded as it started (its topic,
            payload key, catalogue and device cap), so the notification is the one the server would make; when
            no 'serve' has recorded them and no --apns-topic is given, it refuses rather than guess.
            Exit codes: 0 queued, 1 refused (unknown account or code, payload over 4096 bytes, push settings
            unknown), 2 bad command line.
            """)

    static let devicesSpec = CommandSpec(
        name: "homeport-server push devices",
        summary:
            "List the devices registered for pushes, with their kind (sandbox or production for APNs, webpush, fcm) and accounts.",
        options: [ServerCLI.databaseOption, .flag("json", help: "Print a JSON array.")],
        discussion:
            "APNs tokens are shown by their first 8 hex digits, Web Push subscriptions and FCM registrations by webpush: or fcm: and the first 8 of their name (never the endpoint or the FCM token)."
    )

    static let outboxSpec = CommandSpec(
        name: "homeport-server push outbox",
        summary: "Show the pushes waiting to be sent: by state and kind, the oldest, why the failed failed.",
        options: [ServerCLI.databaseOption, .flag("json", help: "Print a JSON object.")],
        discussion: """
            Counts every replica's outbox (the one database): pending (due now or later), sending (claimed by a
            sender), failed (given up, kept a while). Never a device token or a payload.
            """)

    static let vapidKeySpec = CommandSpec(
        name: "homeport-server push vapid-key",
        summary: "Print the VAPID public key that browsers and UnifiedPush distributors subscribe with.",
        options: [
            .value(
                "vapid-key-file", "FILE",
                help:
                    "The VAPID key serve --vapid-key-file uses; made there (a new P-256 key, mode 0600) when missing.",
                environment: "HOMEPORT_VAPID_KEY_FILE")
        ],
        discussion: """
            Prints the public key as base64url (the applicationServerKey a page or an app subscribes with;
            apps signed in can also read it from GET /api/v1/push/webpush-key). The private key never leaves the file.
            Exit codes: 0 printed, 2 bad command line or a key file that cannot be used.
            """)

    static func run(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let action = arguments.first, !action.hasPrefix("-") else {
            if arguments.contains("--help") || arguments.contains("-h") {
                ServerCLI.line(
                    "Usage: homeport-server push send|devices|outbox|vapid-key [options]\n\n\(sendSpec.summary)\n"
                        + "\(devicesSpec.summary)\n\(outboxSpec.summary)\n\(vapidKeySpec.summary)")
                return .success
            }
            throw UsageError("push needs an action: 'push send', 'push devices', 'push outbox' or 'push vapid-key'")
        }
        let rest = Array(arguments.dropFirst())
        switch action {
        case "send": return try send(rest, environment: environment)
        case "devices": return try devices(rest, environment: environment)
        case "outbox": return try outbox(rest, environment: environment)
        case "vapid-key": return try vapidKey(rest, environment: environment)
        default: throw UsageError("unknown push action '\(action)'; use 'send', 'devices', 'outbox' or 'vapid-key'")
        }
    }

    /// The command line's database, migrated.
    private static func openDatabase(_ parsed: ParsedArguments, _ spec: CommandSpec, _ environment: [String: String])
        throws -> any Database
    {
        let database = try ServerCLI.database(parsed, spec, environment).open()
        try ServerCLI.migrate(database)
        return database
    }

    private static func center(_ database: any Database, settings: PushSettings) -> PushCenter {
        PushCenter(
            database: database, identity: IdentityStore(database: database), settings: settings,
            clock: SystemWallClock(), logger: Logger(label: "homeport.cli", minimumLevel: .warning))
    }

    static func send(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(sendSpec, arguments) else { return .success }
        func required(_ name: String) throws -> String {
            guard let value = parsed.value(name, spec: sendSpec, environment: [:]) else {
                throw UsageError("push send needs --\(name)")
            }
            return value
        }
        let email = try required("email")
        let code = try required("code")
        let title = try required("title")
        var objectID: Int64?
        if let text = parsed.value("id", spec: sendSpec, environment: [:]) {
            guard let value = Int64(text) else { throw UsageError("--id must be a whole number, not '\(text)'") }
            objectID = value
        }
        var settings = try PushOptions.settings(parsed, sendSpec, environment, sender: false)
        let database = try openDatabase(parsed, sendSpec, environment)
        defer { database.close() }
        let given = { (name: String, variable: String) in parsed.options[name] != nil || environment[variable] != nil }
        if let serving = try ServingPushSettings.recorded(in: database) {
            if !given("apns-topic", "HOMEPORT_APNS_TOPIC") { settings.topic = serving.topic }
            settings.webPushKey = serving.webPushKey
            settings.fcmProject = serving.fcmProject
            if !given("push-key", "HOMEPORT_PUSH_KEY") { settings.appDataKey = serving.appDataKey }
            if !given("catalogue", "HOMEPORT_CATALOGUE") { settings.extraCodes = serving.extraCodes }
            if !given("max-devices-per-account", "HOMEPORT_MAX_DEVICES_PER_ACCOUNT") {
                settings.maxDevicesPerAccount = serving.maxDevicesPerAccount
            }
        } else if settings.topic == nil {
            ServerCLI.error(
                "homeport-server: no 'serve' has recorded its push settings in this database, and no --apns-topic was given: "
                    + "start 'serve' once, or pass --apns-topic BUNDLE_ID (and --catalogue, --push-key as serve has them)"
            )
            return .failure
        }
        settings = settings.serving(ServerCLI.product.withLock { $0 })
        let push = center(database, settings: settings)
        do {
            let delivery = try push.notify(
                ProductNotification(
                    code: code, title: title, body: parsed.value("body", spec: sendSpec, environment: [:]),
                    thread: parsed.value("thread", spec: sendSpec, environment: [:]), objectID: objectID), email: email)
            let pushes =
                delivery.muted
                ? "no push: the thread is muted"
                : settings.topic == nil && settings.webPushKey == nil && settings.fcmProject == nil
                    ? "no push: the server has pushes off (no --apns-topic, --vapid-key-file or --fcm-service-account-file)"
                    : "\(delivery.queued) push(es) queued"
            ServerCLI.line("notification \(delivery.seq) for \(email); \(pushes)")
            return .success
        } catch let refusal as PushCenter.Refusal {
            ServerCLI.error("homeport-server: \(refusal.description)")
            return .failure
        }
    }

    static func devices(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(devicesSpec, arguments) else { return .success }
        let database = try openDatabase(parsed, devicesSpec, environment)
        let push = center(database, settings: PushSettings())
        defer { database.close() }
        let devices = try push.allDevices()
        let formatter = ISO8601DateFormatter()
        if parsed.flag("json") {
            let objects = devices.map {
                [
                    "token": shown($0.device), "provider": $0.device.provider.rawValue,
                    "environment": $0.device.environment.rawValue, "topic": $0.device.topic, "email": $0.email,
                    "registeredAt": formatter.string(
                        from: Date(timeIntervalSince1970: TimeInterval($0.device.updatedAt))),
                ] as [String: Any]
            }
            try ServerCLI.printJSON(objects)
        } else if devices.isEmpty {
            ServerCLI.line("no devices registered")
        } else {
            for entry in devices {
                let kind =
                    entry.device.provider == .apns ? entry.device.environment.rawValue : entry.device.provider.rawValue
                ServerCLI.line(
                    "\(shown(entry.device))…  \(kind.padding(toLength: 10, withPad: " ", startingAt: 0)) \(entry.email)"
                )
            }
        }
        return .success
    }

    static func outbox(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(outboxSpec, arguments) else { return .success }
        let database = try openDatabase(parsed, outboxSpec, environment)
        defer { database.close() }
        let summary = try PushOutbox(database).summary()
        let oldest = summary.oldestWaiting.map {
            ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval($0)))
        }
        if parsed.flag("json") {
            var object: [String: Any] = [:]
            for state in OutboxSummary.states {
                var byProvider: [String: Any] = summary.counts[state] ?? [:]
                byProvider["total"] = summary.total(state)
                object[state] = byProvider
            }
            object["oldestWaitingAt"] = oldest ?? NSNull()
            object["failedReasons"] = summary.failedReasons.map { ["reason": $0.reason, "count": $0.count] }
            try ServerCLI.printJSON(object)
            return .success
        }
        for state in OutboxSummary.states {
            let kinds = (summary.counts[state] ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
            ServerCLI.line(
                state.padding(toLength: 8, withPad: " ", startingAt: 0) + " \(summary.total(state))"
                    + (kinds.isEmpty ? "" : "  (" + kinds.joined(separator: ", ") + ")"))
        }
        ServerCLI.line("oldest waiting: " + (oldest ?? "none"))
        for (reason, count) in summary.failedReasons {
            ServerCLI.line("failed \(count)× " + Output.printable(reason.isEmpty ? "(no reason recorded)" : reason))
        }
        return .success
    }

    /// A device as operators see it: an APNs token's first 8 digits; `webpush:` or `fcm:` and 8 of
    /// a subscription's or registration's name.
    private static func shown(_ device: PushDevice) -> String {
        switch device.provider {
        case .apns: String(device.token.prefix(8))
        case .webpush: String(device.token.prefix(WebPushSubscription.tokenPrefix.count + 8))
        case .fcm: String(device.token.prefix(FCMRegistration.tokenPrefix.count + 8))
        }
    }

    static func vapidKey(_ arguments: [String], environment: [String: String]) throws -> ExitCode {
        guard let parsed = try ServerCLI.parse(vapidKeySpec, arguments) else { return .success }
        guard let file = parsed.value("vapid-key-file", spec: vapidKeySpec, environment: environment) else {
            throw UsageError("push vapid-key needs --vapid-key-file FILE")
        }
        do {
            let key = try WebPushSettings(keyPEM: WebPushSettings.key(fromFile: file), subject: "").publicKey()
            ServerCLI.line(key)
            return .success
        } catch let error as ConfigurationError {
            throw UsageError(error.description)
        }
    }
}
