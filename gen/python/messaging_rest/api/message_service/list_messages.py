from http import HTTPStatus
from typing import Any

import httpx

from ...client import AuthenticatedClient, Client
from ...models.error import Error
from ...models.list_messages_response import ListMessagesResponse
from ...models.message_status import MessageStatus
from ...types import UNSET, Response, Unset


def _get_kwargs(
    *,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    to: str | Unset = UNSET,
) -> dict[str, Any]:

    params: dict[str, Any] = {}

    params["page_size"] = page_size

    params["page_token"] = page_token

    json_status: str | Unset = UNSET
    if not isinstance(status, Unset):
        json_status = status.value

    params["status"] = json_status

    params["to"] = to

    params = {k: v for k, v in params.items() if v is not UNSET and v is not None}

    _kwargs: dict[str, Any] = {
        "method": "get",
        "url": "/v1/messages",
        "params": params,
    }

    return _kwargs


def _parse_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Error | ListMessagesResponse:
    if response.status_code == 200:
        response_200 = ListMessagesResponse.from_dict(response.json())

        return response_200

    if response.status_code == 400:
        response_400 = Error.from_dict(response.json())

        return response_400

    if response.status_code == 401:
        response_401 = Error.from_dict(response.json())

        return response_401

    if response.status_code == 403:
        response_403 = Error.from_dict(response.json())

        return response_403

    if response.status_code == 429:
        response_429 = Error.from_dict(response.json())

        return response_429

    if response.status_code == 500:
        response_500 = Error.from_dict(response.json())

        return response_500

    if response.status_code == 503:
        response_503 = Error.from_dict(response.json())

        return response_503

    response_default = Error.from_dict(response.json())

    return response_default


def _build_response(
    *, client: AuthenticatedClient | Client, response: httpx.Response
) -> Response[Error | ListMessagesResponse]:
    return Response(
        status_code=HTTPStatus(response.status_code),
        content=response.content,
        headers=response.headers,
        parsed=_parse_response(client=client, response=response),
    )


def sync_detailed(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    to: str | Unset = UNSET,
) -> Response[Error | ListMessagesResponse]:
    """Lists the messages sent by the calling key, newest first.

     Lists the messages sent by the calling key, newest first.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        status (MessageStatus | Unset): Status of a message. In JSON: "scheduled", "accepted",
            "sent",
            "delivered", "read", "failed", "canceled". The order scheduled < accepted <
            sent < delivered < read holds; failed and canceled are final.
            Values:
            - `accepted`: Accepted by the service, not yet by the network.
            - `sent`: The messaging network accepted the message.
            - `delivered`: The message reached the handset.
            - `read`: The recipient opened it (only with read receipts on).
            - `failed`: The message will not arrive.
            - `scheduled`: Accepted with a send_at in the future: waits for it, not yet with the
            network (it may be canceled).
            - `canceled`: Canceled by its key before it was handed to the network; its credits were
            given back. Final.
        to (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListMessagesResponse]
    """

    kwargs = _get_kwargs(
        page_size=page_size,
        page_token=page_token,
        status=status,
        to=to,
    )

    response = client.get_httpx_client().request(
        **kwargs,
    )

    return _build_response(client=client, response=response)


def sync(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    to: str | Unset = UNSET,
) -> Error | ListMessagesResponse | None:
    """Lists the messages sent by the calling key, newest first.

     Lists the messages sent by the calling key, newest first.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        status (MessageStatus | Unset): Status of a message. In JSON: "scheduled", "accepted",
            "sent",
            "delivered", "read", "failed", "canceled". The order scheduled < accepted <
            sent < delivered < read holds; failed and canceled are final.
            Values:
            - `accepted`: Accepted by the service, not yet by the network.
            - `sent`: The messaging network accepted the message.
            - `delivered`: The message reached the handset.
            - `read`: The recipient opened it (only with read receipts on).
            - `failed`: The message will not arrive.
            - `scheduled`: Accepted with a send_at in the future: waits for it, not yet with the
            network (it may be canceled).
            - `canceled`: Canceled by its key before it was handed to the network; its credits were
            given back. Final.
        to (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListMessagesResponse
    """

    return sync_detailed(
        client=client,
        page_size=page_size,
        page_token=page_token,
        status=status,
        to=to,
    ).parsed


async def asyncio_detailed(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    to: str | Unset = UNSET,
) -> Response[Error | ListMessagesResponse]:
    """Lists the messages sent by the calling key, newest first.

     Lists the messages sent by the calling key, newest first.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        status (MessageStatus | Unset): Status of a message. In JSON: "scheduled", "accepted",
            "sent",
            "delivered", "read", "failed", "canceled". The order scheduled < accepted <
            sent < delivered < read holds; failed and canceled are final.
            Values:
            - `accepted`: Accepted by the service, not yet by the network.
            - `sent`: The messaging network accepted the message.
            - `delivered`: The message reached the handset.
            - `read`: The recipient opened it (only with read receipts on).
            - `failed`: The message will not arrive.
            - `scheduled`: Accepted with a send_at in the future: waits for it, not yet with the
            network (it may be canceled).
            - `canceled`: Canceled by its key before it was handed to the network; its credits were
            given back. Final.
        to (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Response[Error | ListMessagesResponse]
    """

    kwargs = _get_kwargs(
        page_size=page_size,
        page_token=page_token,
        status=status,
        to=to,
    )

    response = await client.get_async_httpx_client().request(**kwargs)

    return _build_response(client=client, response=response)


async def asyncio(
    *,
    client: AuthenticatedClient,
    page_size: int | Unset = UNSET,
    page_token: str | Unset = UNSET,
    status: MessageStatus | Unset = UNSET,
    to: str | Unset = UNSET,
) -> Error | ListMessagesResponse | None:
    """Lists the messages sent by the calling key, newest first.

     Lists the messages sent by the calling key, newest first.

    Scope: `messages:read`.

    Args:
        page_size (int | Unset):
        page_token (str | Unset):
        status (MessageStatus | Unset): Status of a message. In JSON: "scheduled", "accepted",
            "sent",
            "delivered", "read", "failed", "canceled". The order scheduled < accepted <
            sent < delivered < read holds; failed and canceled are final.
            Values:
            - `accepted`: Accepted by the service, not yet by the network.
            - `sent`: The messaging network accepted the message.
            - `delivered`: The message reached the handset.
            - `read`: The recipient opened it (only with read receipts on).
            - `failed`: The message will not arrive.
            - `scheduled`: Accepted with a send_at in the future: waits for it, not yet with the
            network (it may be canceled).
            - `canceled`: Canceled by its key before it was handed to the network; its credits were
            given back. Final.
        to (str | Unset):

    Raises:
        errors.UnexpectedStatus: If the server returns an undocumented status code and Client.raise_on_unexpected_status is True.
        httpx.TimeoutException: If the request takes longer than Client.timeout.

    Returns:
        Error | ListMessagesResponse
    """

    return (
        await asyncio_detailed(
            client=client,
            page_size=page_size,
            page_token=page_token,
            status=status,
            to=to,
        )
    ).parsed
