import type { DescFile } from "@bufbuild/protobuf";
import { file_messaging_console_v1_api_keys } from "../../gen/messaging/console/v1/api_keys_pb.js";
import { file_messaging_console_v1_audit_log } from "../../gen/messaging/console/v1/audit_log_pb.js";
import { file_messaging_console_v1_console_users } from "../../gen/messaging/console/v1/console_users_pb.js";
import { file_messaging_console_v1_credits } from "../../gen/messaging/console/v1/credits_pb.js";
import { file_messaging_console_v1_deliveries } from "../../gen/messaging/console/v1/deliveries_pb.js";
import { file_messaging_console_v1_flow_responses } from "../../gen/messaging/console/v1/flow_responses_pb.js";
import { file_messaging_console_v1_message_stats } from "../../gen/messaging/console/v1/message_stats_pb.js";
import { file_messaging_console_v1_messages } from "../../gen/messaging/console/v1/messages_pb.js";
import { file_messaging_console_v1_opt_outs } from "../../gen/messaging/console/v1/opt_outs_pb.js";
import { file_messaging_console_v1_request_log } from "../../gen/messaging/console/v1/request_log_pb.js";
import { file_messaging_console_v1_senders } from "../../gen/messaging/console/v1/senders_pb.js";
import { file_messaging_console_v1_simulator } from "../../gen/messaging/console/v1/simulator_pb.js";
import { file_messaging_console_v1_templates } from "../../gen/messaging/console/v1/templates_pb.js";
import { file_messaging_console_v1_webhook_endpoints } from "../../gen/messaging/console/v1/webhook_endpoints_pb.js";
import { file_messaging_console_v1_workspaces } from "../../gen/messaging/console/v1/workspaces_pb.js";
import { file_messaging_v1_account } from "../../gen/messaging/v1/account_pb.js";
import { file_messaging_v1_events } from "../../gen/messaging/v1/events_pb.js";
import { file_messaging_v1_flow_responses } from "../../gen/messaging/v1/flow_responses_pb.js";
import { file_messaging_v1_messages } from "../../gen/messaging/v1/messages_pb.js";
import { file_messaging_v1_opt_outs } from "../../gen/messaging/v1/opt_outs_pb.js";
import { file_messaging_v1_senders } from "../../gen/messaging/v1/senders_pb.js";
import { file_messaging_v1_templates } from "../../gen/messaging/v1/templates_pb.js";
import { file_messaging_v1_webhooks } from "../../gen/messaging/v1/webhooks_pb.js";

/** The files of the public API (messaging.v1) that define messages or services. */
export const PUBLIC_API_FILES: readonly DescFile[] = [
  file_messaging_v1_account,
  file_messaging_v1_senders,
  file_messaging_v1_templates,
  file_messaging_v1_messages,
  file_messaging_v1_opt_outs,
  file_messaging_v1_webhooks,
  file_messaging_v1_flow_responses,
  file_messaging_v1_events,
];

/** The files of the console API (messaging.console.v1) that define messages or services. */
export const CONSOLE_API_FILES: readonly DescFile[] = [
  file_messaging_console_v1_workspaces,
  file_messaging_console_v1_api_keys,
  file_messaging_console_v1_console_users,
  file_messaging_console_v1_senders,
  file_messaging_console_v1_templates,
  file_messaging_console_v1_credits,
  file_messaging_console_v1_webhook_endpoints,
  file_messaging_console_v1_deliveries,
  file_messaging_console_v1_messages,
  file_messaging_console_v1_message_stats,
  file_messaging_console_v1_opt_outs,
  file_messaging_console_v1_request_log,
  file_messaging_console_v1_audit_log,
  file_messaging_console_v1_simulator,
  file_messaging_console_v1_flow_responses,
];
