#if canImport(UserNotifications)
    import Foundation
    import UserNotifications

    /// For an app's notification service extension, on Apple platforms: routes a push before it is
    /// shown, so its banner joins the right server's thread and tapping it opens the right server.
    ///
    /// Deliberately thin: it only calls ``HomeportClient/routePush(_:)`` (no network) and writes
    /// the answer into the content. It is not compiled by the Linux build and no test here runs it
    /// (UserNotifications exists only on Apple platforms); the routing it relies on is tested.
    ///
    /// ```swift
    /// override func didReceive(_ request: UNNotificationRequest,
    ///                          withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void) {
    ///     contentHandler(NotificationServiceHelper.content(for: request, client: client))
    /// }
    /// ```
    ///
    /// The app reads ``serverKey`` and ``deepLinkKey`` from the notification's `userInfo` when the
    /// person taps it, and calls ``HomeportClient/receivePush(_:)`` there to resync that server's
    /// catalogue when it is due.
    public enum NotificationServiceHelper {
        /// The `userInfo` key of the server the push was routed to (its key in the directory).
        public static let serverKey = "homeport.server"
        /// The `userInfo` key of the deep link, to be opened on ``serverKey``'s server only.
        public static let deepLinkKey = "homeport.deepLink"
        /// The thread of a push that could not be attributed: it is never any server's thread.
        public static let unattributedThread = "homeport.unattributed"

        /// The content to show for `request`: routed, its thread is the namespaced thread id and
        /// `userInfo` names the server and the deep link; not routed (``PushRoutingFailure``), it
        /// joins no server's thread and names no server or link (any the payload planted under
        /// these keys is removed), so tapping it opens nothing.
        public static func content(for request: UNNotificationRequest, client: HomeportClient) -> UNNotificationContent
        {
            guard let content = request.content.mutableCopy() as? UNMutableNotificationContent else {
                return request.content
            }
            content.userInfo[serverKey] = nil
            content.userInfo[deepLinkKey] = nil
            let payload = (try? JSONSerialization.data(withJSONObject: request.content.userInfo)) ?? Data()
            guard let routed = try? client.routePush(payload) else {
                content.threadIdentifier = unattributedThread
                return content
            }
            content.threadIdentifier = routed.threadID ?? routed.server
            content.userInfo[serverKey] = routed.server
            if let link = routed.deepLink { content.userInfo[deepLinkKey] = link.absoluteString }
            return content
        }
    }
#endif
