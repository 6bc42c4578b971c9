import Foundation
import HomeportClient

#if canImport(UserNotifications)
    import UserNotifications
#endif

final class NotificationService: UNNotificationServiceExtension {
    override func didReceive(
        _ request: UNNotificationRequest,
        withContentHandler contentHandler: @escaping (UNNotificationContent) -> Void
    ) {
        guard
            let container = FileManager.default
                .containerURL(forSecurityApplicationGroupIdentifier: "group.org.example.books"),
            let directory = try? ServerDirectory(
                directory: container.appending(path: "homeport").path(percentEncoded: false))
        else { return contentHandler(request.content) }
        let client = HomeportClient(
            directory: directory, vault: KeychainVault(accessGroup: "ABCDE12345.org.example.books"))
        contentHandler(NotificationServiceHelper.content(for: request, client: client))
    }
}
