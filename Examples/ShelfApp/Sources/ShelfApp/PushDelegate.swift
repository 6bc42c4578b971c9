#if os(iOS)
    import Foundation
    import HomeportWire
    import ShelfKit
    import UIKit
    import UserNotifications

    /// Pushes: the device token goes to every server signed in on; a tapped notification opens
    /// the server that sent it (its `s`), whichever server is shown.
    final class PushDelegate: NSObject, UIApplicationDelegate, UNUserNotificationCenterDelegate {
        /// The app's model, set when its scene appears.
        @MainActor static var shelf: Shelf?

        func application(
            _ application: UIApplication,
            didFinishLaunchingWithOptions launchOptions: [UIApplication.LaunchOptionsKey: Any]? = nil
        ) -> Bool {
            UNUserNotificationCenter.current().delegate = self
            Task { @MainActor in
                let granted = try? await UNUserNotificationCenter.current().requestAuthorization(options: [
                    .alert, .sound, .badge,
                ])
                if granted == true { UIApplication.shared.registerForRemoteNotifications() }
            }
            return true
        }

        func application(
            _ application: UIApplication, didRegisterForRemoteNotificationsWithDeviceToken deviceToken: Data
        ) {
            #if DEBUG
                let environment = PushEnvironment.sandbox
            #else
                let environment = PushEnvironment.production
            #endif
            Task { @MainActor in await Self.shelf?.registerForPushes(token: deviceToken, environment: environment) }
        }

        nonisolated func userNotificationCenter(
            _ center: UNUserNotificationCenter, didReceive response: UNNotificationResponse
        ) async {
            let userInfo = response.notification.request.content.userInfo
            guard let payload = try? JSONSerialization.data(withJSONObject: userInfo) else { return }
            await Task { @MainActor in _ = await Self.shelf?.open(push: payload) }.value
        }
    }
#endif
