import Foundation
import HomeportHTTP
import HomeportWire

/// "Notifications in this browser": the account page's way to take the server's notifications
/// as Web Pushes. The page's script registers a service worker, subscribes with the server's
/// VAPID key and posts the subscription here with the form's CSRF token; the worker shows each
/// push (the same JSON an iPhone gets). The subscription belongs to the browser's session, as an
/// app's device belongs to the app's: signing out drops it.
extension WebDoor {
    /// The page's path.
    static let notificationsPath = base + "/notifications"
    /// The page's script.
    static let notificationsScriptPath = base + "/notifications.js"

    /// The page's policy: the default one, with this origin's scripts, fetches and workers.
    static let notificationsPolicy =
        "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; script-src 'self'; "
        + "connect-src 'self'; worker-src 'self'"

    /// Whether the server takes Web Push subscriptions (it holds a VAPID key, or its gateway does).
    var takesWebPush: Bool { push?.settings.webPushKey != nil }

    /// `GET /account/notifications`.
    func notificationsPage(_ context: RequestContext) -> HTTPResponse {
        guard case .signedIn = context.caller else { return .seeOther("/account/login") }
        guard let key = push?.settings.webPushKey else {
            return page(
                "Notifications in this browser",
                WebPage.message("This server does not send notifications to browsers."), status: 404)
        }
        var response = page(
            "Notifications in this browser", WebPage.notificationsSection(csrf: context.csrfToken, key: key))
        response.headers.set("Content-Security-Policy", Self.notificationsPolicy)
        return response
    }

    /// `POST /account/notifications` (`endpoint`, `p256dh`, `auth`): registers the browser's
    /// subscription for the signed-in account, as the app door's `POST /api/v1/push/devices`
    /// does; a JSON answer, for the page's script.
    func subscribe(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(let session, let account) = context.caller else { throw RequireSignedIn.refusal }
        guard let push, push.settings.webPushKey != nil else {
            throw HTTPError(status: 404, code: APIErrorCode.notFound, message: "This server does not send Web Push.")
        }
        let registration = try WebPushSubscription.registration(
            endpoint: fields["endpoint"], fields["p256dh"], fields["auth"],
            allowPrivate: push.settings.takesPrivateWebPushEndpoints)
        try PushRoutes.register(registration, push: push, session: session, account: account)
        return try .json(PushDeviceRegistration(webPushToken: registration.token))
    }

    /// `POST /account/notifications/remove` (`endpoint`): the browser's subscription stops
    /// getting this account's notifications; 204 (an unknown one changes nothing).
    func unsubscribe(_ request: HTTPRequest, _ context: RequestContext) throws -> HTTPResponse {
        let fields = request.formFields
        if let refusal = honeypot(fields) { return refusal }
        guard case .signedIn(_, let account) = context.caller else { throw RequireSignedIn.refusal }
        guard let push, let endpoint = fields["endpoint"], !endpoint.isEmpty, endpoint.utf8.count <= 1024 else {
            throw HTTPError.invalidField("endpoint", "Send the subscription's endpoint.")
        }
        try push.unregister(
            token: WebPushSubscription.token(endpoint: WebPushSubscription.normalized(endpoint)), account: account)
        return HTTPResponse(status: 204)
    }

    /// `GET` of one of the page's scripts.
    static func script(_ source: String) -> HTTPResponse {
        HTTPResponse(
            status: 200,
            headers: [
                "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "no-cache",
                "X-Content-Type-Options": "nosniff", "Content-Security-Policy": "default-src 'none'",
            ],
            body: Data(source.utf8))
    }
}

extension WebPage {
    /// The notifications section: what it does, the buttons, and where the script says how it went.
    static func notificationsSection(csrf: String, key: String) -> String {
        """
        <section id="browser-notifications" data-key="\(htmlEscaped(key))" data-csrf="\(htmlEscaped(csrf))">
        <p class="note">This browser shows this account's notifications, even with this page closed. Signing out here turns them off.</p>
        <button type="button" id="notifications-on">Turn on notifications</button>
        <button type="button" id="notifications-off">Turn off notifications</button>
        <p id="notifications-status" class="note" role="status"></p>
        <p id="notifications-last" class="note"></p>
        </section>
        <nav><a href="/account">Back to your account</a></nav>
        <script src="\(WebDoor.notificationsScriptPath)"></script>
        """
    }
}
