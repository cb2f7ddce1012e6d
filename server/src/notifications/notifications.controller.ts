import { Controller, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiBadRequestResponse, ApiNotFoundResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';

import { DeliveriesQueryDto, NotificationDeliveryDto, NotificationDeliveryListDto } from './dto/notifications.dto';
import { NotificationsService } from './notifications.service';

/** Needs you outside the browser (issue 47 §3): what was sent where, and a test message. */
@ApiTags('notifications')
@Controller('notifications')
export class NotificationsController {
  constructor(private readonly notifications: NotificationsService) {}

  @Get('deliveries')
  @ApiOperation({ summary: 'Messages sent to the notification channels, newest first: status, attempts, last error' })
  @ApiOkResponse({ type: NotificationDeliveryListDto })
  @ApiBadRequestResponse()
  async deliveries(@Query() query: DeliveriesQueryDto): Promise<NotificationDeliveryListDto> {
    return { items: await this.notifications.list(query.limit ?? 100, query.channel) };
  }

  @Post('channels/:id/test')
  @HttpCode(200)
  @ApiOperation({ summary: 'Sends a sample message to one channel now (no retry) and says how it went' })
  @ApiOkResponse({ type: NotificationDeliveryDto })
  @ApiNotFoundResponse({ description: 'No channel of that id' })
  test(@Param('id') id: string): Promise<NotificationDeliveryDto> {
    return this.notifications.test(id);
  }
}
