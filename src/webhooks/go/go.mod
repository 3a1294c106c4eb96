module messaging-service/webhooks

go 1.21
