"""Contains all the data models used in inputs/outputs"""

from .api_key_summary import ApiKeySummary
from .batch_send_messages_error import BatchSendMessagesError
from .batch_send_messages_error_details_type_0 import BatchSendMessagesErrorDetailsType0
from .batch_send_messages_request import BatchSendMessagesRequest
from .batch_send_messages_response import BatchSendMessagesResponse
from .batch_send_messages_result import BatchSendMessagesResult
from .cancel_message_request import CancelMessageRequest
from .contact_event import ContactEvent
from .contact_event_data import ContactEventData
from .error import Error
from .error_error import ErrorError
from .error_error_details import ErrorErrorDetails
from .field_violation import FieldViolation
from .flow_completed_event import FlowCompletedEvent
from .flow_response import FlowResponse
from .flow_response_file import FlowResponseFile
from .flow_response_response_type_0 import FlowResponseResponseType0
from .get_me_response import GetMeResponse
from .list_flow_responses_response import ListFlowResponsesResponse
from .list_messages_response import ListMessagesResponse
from .list_opt_outs_response import ListOptOutsResponse
from .list_senders_response import ListSendersResponse
from .list_templates_response import ListTemplatesResponse
from .list_webhooks_response import ListWebhooksResponse
from .message import Message
from .message_error import MessageError
from .message_event import MessageEvent
from .message_event_data import MessageEventData
from .message_status import MessageStatus
from .opt_out import OptOut
from .opt_out_source import OptOutSource
from .opt_out_status import OptOutStatus
from .queued_reason import QueuedReason
from .send_message_request import SendMessageRequest
from .send_message_template import SendMessageTemplate
from .send_message_template_flow import SendMessageTemplateFlow
from .send_message_template_variables import SendMessageTemplateVariables
from .sender import Sender
from .sender_status import SenderStatus
from .template import Template
from .template_category import TemplateCategory
from .template_flow import TemplateFlow
from .template_status import TemplateStatus
from .template_variable import TemplateVariable
from .webhook import Webhook

__all__ = (
    "ApiKeySummary",
    "BatchSendMessagesError",
    "BatchSendMessagesErrorDetailsType0",
    "BatchSendMessagesRequest",
    "BatchSendMessagesResponse",
    "BatchSendMessagesResult",
    "CancelMessageRequest",
    "ContactEvent",
    "ContactEventData",
    "Error",
    "ErrorError",
    "ErrorErrorDetails",
    "FieldViolation",
    "FlowCompletedEvent",
    "FlowResponse",
    "FlowResponseFile",
    "FlowResponseResponseType0",
    "GetMeResponse",
    "ListFlowResponsesResponse",
    "ListMessagesResponse",
    "ListOptOutsResponse",
    "ListSendersResponse",
    "ListTemplatesResponse",
    "ListWebhooksResponse",
    "Message",
    "MessageError",
    "MessageEvent",
    "MessageEventData",
    "MessageStatus",
    "OptOut",
    "OptOutSource",
    "OptOutStatus",
    "QueuedReason",
    "SendMessageRequest",
    "SendMessageTemplate",
    "SendMessageTemplateFlow",
    "SendMessageTemplateVariables",
    "Sender",
    "SenderStatus",
    "Template",
    "TemplateCategory",
    "TemplateFlow",
    "TemplateStatus",
    "TemplateVariable",
    "Webhook",
)
